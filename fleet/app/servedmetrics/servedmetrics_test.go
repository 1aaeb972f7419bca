package servedmetrics_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"

	"github.com/etcdfleet/etcdfleet/fleet/app/servedmetrics"
)

// targetLabels are the labels the Prometheus Operator attaches to every
// series of a ServiceMonitor's targets (the chart ships one). A served
// label of the same name is renamed exported_<name> on ingestion, unless
// the scrape honours labels, so queries written against the code's label
// name silently match nothing.
var targetLabels = []string{"job", "instance", "namespace", "pod", "service", "endpoint", "container"}

// allowed are lint problems that stay on purpose: a family-name prefix
// and a problem text, each with its reason. A rule that excuses nothing
// any more fails the test, so the list does not outlive what it excuses.
var allowed = []struct{ prefix, problem, reason string }{
	// The namespace of an EtcdCluster is what the label says; renaming it
	// would break every query, alert and board users have written since
	// these were documented (docs/operations.md, Backups and
	// Defragmentation). Under the chart's ServiceMonitor it arrives as
	// exported_namespace, which the chart's alerts and board use.
	{"etcdfleet_snapshot_", "label namespace collides with a target label", "documented label; served as exported_namespace"},
	{"etcdfleet_defrag_", "label namespace collides with a target label", "documented label; served as exported_namespace"},
	{"etcdfleet_restore_drill_", "label namespace collides with a target label", "documented label; served as exported_namespace"},
	// The registration Secret's namespace, on every family of the
	// provider (docs/operations.md, Missing rights, Security model): the
	// same label on a new provider family keeps them joinable.
	{"etcdfleet_kubeconfigsecret_", "label namespace collides with a target label", "documented label; served as exported_namespace"},
}

// lintTargetLabels is a promlint validation of our own: a label that a
// ServiceMonitor's target labels overwrite. It checks this project's
// families only; the libraries' labels are theirs.
func lintTargetLabels(mf *dto.MetricFamily) []error {
	if !strings.HasPrefix(mf.GetName(), "etcdfleet_") {
		return nil
	}
	seen := map[string]bool{}
	var errs []error
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if slices.Contains(targetLabels, l.GetName()) && !seen[l.GetName()] {
				seen[l.GetName()] = true
				errs = append(errs, fmt.Errorf("label %s collides with a target label", l.GetName()))
			}
		}
	}
	return errs
}

// lint returns promlint's problems with fams, and our own, as
// "family: text".
func lint(t *testing.T, fams []*dto.MetricFamily) []string {
	t.Helper()
	l := promlint.NewWithMetricFamilies(fams)
	l.AddCustomValidations(lintTargetLabels)
	problems, err := l.Lint()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range problems {
		out = append(out, p.Metric+": "+p.Text)
	}
	return out
}

// TestServedMetricsLint: every family /metrics serves, ours and the
// libraries' (controller-runtime, client-go, the Go and process
// collectors), passes promlint and our target-label check, but for the
// allowed problems above.
func TestServedMetricsLint(t *testing.T) {
	fams, err := servedmetrics.Families()
	if err != nil {
		t.Fatal(err)
	}
	used := make([]bool, len(allowed))
	for _, p := range lint(t, fams) {
		ok := false
		for i, a := range allowed {
			if strings.HasPrefix(p, a.prefix) && strings.HasSuffix(p, ": "+a.problem) {
				ok, used[i] = true, true
			}
		}
		if !ok {
			t.Errorf("lint: %s", p)
		}
	}
	for i, a := range allowed {
		if !used[i] {
			t.Errorf("allowed %s* %q excuses nothing any more: remove it", a.prefix, a.problem)
		}
	}
}

// TestLintCatchesBadNames: the check above would fail on a badly named
// family, whether or not it has a series yet.
func TestLintCatchesBadNames(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(
		prometheus.NewCounterVec(prometheus.CounterOpts{Name: "etcdfleet_bad_replacements", Help: "no _total"}, []string{"cluster"}),
		prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "etcdfleet_bad_age_milliseconds", Help: "not a base unit"}, []string{"namespace"}),
	)
	fams, err := servedmetrics.FamiliesOf(reg)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(lint(t, fams), "\n")
	for _, want := range []string{
		"etcdfleet_bad_replacements: counter metrics should have \"_total\" suffix",
		"etcdfleet_bad_age_milliseconds: use base unit \"seconds\" instead of \"milliseconds\"",
		"etcdfleet_bad_age_milliseconds: label namespace collides with a target label",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("lint missed %q; it found:\n%s", want, got)
		}
	}
}

// TestFamiliesCoverVectorsWithoutSeries: a vector nothing has set in this
// process (no cluster was ever engaged here) and the running manager's
// families are listed, with their types and label names.
func TestFamiliesCoverVectorsWithoutSeries(t *testing.T) {
	fams, err := servedmetrics.Families()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		byName[f.GetName()] = f
	}
	for name, want := range map[string]struct {
		typ    dto.MetricType
		labels []string
	}{
		"etcdfleet_member_replacements_total":               {dto.MetricType_COUNTER, []string{"action", "cluster", "reason"}},
		"etcdfleet_cluster_connected":                       {dto.MetricType_GAUGE, []string{"cluster"}},
		"etcdfleet_kubeconfigsecret_probe_duration_seconds": {dto.MetricType_HISTOGRAM, []string{"namespace", "result"}},
		"etcdfleet_limiter_waiting_requests":                {dto.MetricType_GAUGE, nil},
		"etcdfleet_limiter_wait_seconds":                    {dto.MetricType_HISTOGRAM, nil},
	} {
		f := byName[name]
		if f == nil {
			t.Errorf("%s is not listed", name)
			continue
		}
		var labels []string
		if len(f.GetMetric()) > 0 {
			for _, l := range f.GetMetric()[0].GetLabel() {
				labels = append(labels, l.GetName())
			}
		}
		if f.GetType() != want.typ || !slices.Equal(labels, want.labels) {
			t.Errorf("%s: %v %v, want %v %v", name, f.GetType(), labels, want.typ, want.labels)
		}
	}
}
