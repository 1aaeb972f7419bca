package charts_test

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	gotemplate "text/template"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/etcdfleet/etcdfleet/fleet/app/servedmetrics"
)

// targetLabels are attached by the scrape to every series (the Prometheus
// Operator's ServiceMonitor adds the Kubernetes ones); exported_namespace
// is what a served namespace label becomes under it.
var targetLabels = []string{"job", "instance", "namespace", "pod", "service", "endpoint", "container"}

// prometheusOwn are series Prometheus itself writes for every target.
var prometheusOwn = []string{"up"}

// servedCatalog is what the manager serves: the series names a query may
// select, and each family's label names.
type servedCatalog struct {
	series map[string]string   // series name -> family
	labels map[string][]string // family -> label names
}

func served(t *testing.T) servedCatalog {
	t.Helper()
	fams, err := servedmetrics.Families()
	if err != nil {
		t.Fatal(err)
	}
	c := servedCatalog{series: servedmetrics.SeriesNames(fams), labels: map[string][]string{}}
	for _, f := range fams {
		var ls []string
		if len(f.GetMetric()) > 0 {
			for _, l := range f.GetMetric()[0].GetLabel() {
				ls = append(ls, l.GetName())
			}
		}
		if f.GetType() == dto.MetricType_HISTOGRAM {
			ls = append(ls, "le")
		}
		c.labels[f.GetName()] = ls
	}
	return c
}

// check parses expr and returns what is wrong with it: a parse error, a
// selector without a metric name, a name the manager does not serve, or
// a matcher on a label its family does not have.
func (c servedCatalog) check(expr string) []string {
	e, err := parser.ParseExpr(expr)
	if err != nil {
		return []string{fmt.Sprintf("does not parse: %v", err)}
	}
	var bad []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		if vs.Name == "" {
			bad = append(bad, fmt.Sprintf("selector %s names no metric", vs))
			return nil
		}
		if slices.Contains(prometheusOwn, vs.Name) {
			return nil
		}
		fam, ok := c.series[vs.Name]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s is not served by the manager", vs.Name))
			return nil
		}
		for _, m := range vs.LabelMatchers {
			l := m.Name
			switch {
			case l == labels.MetricName, slices.Contains(targetLabels, l), slices.Contains(c.labels[fam], l):
			case l == "exported_namespace" && slices.Contains(c.labels[fam], "namespace"):
			default:
				bad = append(bad, fmt.Sprintf("%s has no label %s (it has %v)", vs.Name, l, c.labels[fam]))
			}
		}
		return nil
	})
	return bad
}

// TestMonitoringReadsServedSeries: every expression of the PrometheusRule
// and of the Grafana board parses as PromQL and selects only series the
// manager serves (servedmetrics, read from the code's registrations), by
// labels they have. A metric renamed in the code fails here.
func TestMonitoringReadsServedSeries(t *testing.T) {
	c := served(t)
	objs := mustTemplate(t, mgmtChart, mgmtRelease, systemNS, append([]string{"--set", "prometheusRule.enabled=true",
		"--set", "grafana.dashboard.enabled=true"}, monitoringAPI...)...)
	exprs := map[string]string{}
	for name, r := range rulesOf(t, find(t, objs, "PrometheusRule", mgmtRelease)) {
		exprs["alert "+name] = r.Expr
	}
	text, _, _ := unstructured.NestedString(find(t, objs, "ConfigMap", mgmtRelease+"-dashboard").Object, "data", "etcdfleet.json")
	b := board(t, []byte(text))
	boardQueries := b.queries(t)
	if len(boardQueries) < 10 {
		t.Errorf("the board has %d queries; its panels were not read", len(boardQueries))
	}
	for where, q := range boardQueries {
		exprs[where] = grafanaMacros.Replace(q)
	}
	selected := map[string]bool{}
	for where, e := range exprs {
		for _, p := range c.check(e) {
			t.Errorf("%s: %s\n\t%s", where, p, e)
		}
		if pe, err := parser.ParseExpr(e); err == nil {
			parser.Inspect(pe, func(n parser.Node, _ []parser.Node) error {
				if vs, ok := n.(*parser.VectorSelector); ok {
					selected[c.series[vs.Name]] = true
				}
				return nil
			})
		}
	}
	// What the alerts and the board are for must be on them.
	for _, fam := range []string{"etcdfleet_cluster_connected", "etcdfleet_cluster_etcdclusters_quorate",
		"etcdfleet_member_replacements_total", "etcdfleet_limiter_grants_total", "etcdfleet_limiter_wait_seconds",
		"etcdfleet_limiter_waiting_requests", "etcdfleet_snapshot_last_success_timestamp_seconds", "etcdfleet_snapshots_total",
		"etcdfleet_cluster_etcdclusters_backup_behind", "etcdfleet_cluster_token_expiry_timestamp_seconds",
		"etcdfleet_cluster_credentials_expiring"} {
		if !selected[fam] {
			t.Errorf("no alert or panel reads %s", fam)
		}
	}
}

// TestServedSeriesCheckCatches: the check above fails on an unserved
// name, a histogram selected by its bare name, a label its family lacks,
// an unparsable expression, a Grafana variable left outside a string, and
// a broken annotation template.
func TestServedSeriesCheckCatches(t *testing.T) {
	c := served(t)
	for _, e := range []string{
		`etcdfleet_cluster_conected == 0`,
		`rate(etcdfleet_limiter_wait_seconds[5m])`,
		`etcdfleet_cluster_connected{etcdcluster="x"}`,
		`sum by (cluster) (etcdfleet_cluster_connected`,
		`{__name__=~"etcdfleet_.+"}`,
		grafanaMacros.Replace(`rate(etcdfleet_limiter_grants_total[$interval])`),
	} {
		if len(c.check(e)) == 0 {
			t.Errorf("%s passes the check", e)
		}
	}
	if checkAlertTemplate(`{{ $labels.cluster }`) == nil || checkAlertTemplate(`{{ $value | humanizeDurations }}`) == nil {
		t.Error("a broken annotation template passes")
	}
	for _, e := range []string{
		`histogram_quantile(0.99, sum by (le) (rate(etcdfleet_limiter_wait_seconds_bucket{job=~"$job"}[5m])))`,
		`time() - etcdfleet_snapshot_last_success_timestamp_seconds{exported_namespace="a", etcdcluster="b"}`,
		`absent(up{job="etcdfleet-metrics"} == 1)`,
	} {
		if bad := c.check(e); len(bad) != 0 {
			t.Errorf("%s: %v", e, bad)
		}
	}
}

// checkAlertTemplate parses and runs an alert annotation as Prometheus
// does (its template prefix and functions, stubbed), on sample data.
func checkAlertTemplate(text string) error {
	const prefix = "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"
	str := func(v any) string { return fmt.Sprint(v) }
	funcs := gotemplate.FuncMap{"humanize": str, "humanize1024": str, "humanizeDuration": str, "humanizePercentage": str,
		"humanizeTimestamp": str, "toUpper": strings.ToUpper, "toLower": strings.ToLower, "title": strings.ToTitle}
	tmpl, err := gotemplate.New("annotation").Option("missingkey=zero").Funcs(funcs).Parse(prefix + text)
	if err != nil {
		return err
	}
	data := map[string]any{"Labels": map[string]string{"cluster": "w1", "etcdcluster": "main", "instance": "10.0.0.1:8080"},
		"ExternalLabels": map[string]string{}, "ExternalURL": "", "Value": 2.0}
	return tmpl.Execute(io.Discard, data)
}
