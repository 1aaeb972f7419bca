package charts_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// monitoringAPI makes helm template see the Prometheus Operator's API.
var monitoringAPI = []string{"--api-versions", "monitoring.coreos.com/v1"}

// wantAlerts are the alerts the chart ships (docs/operations.md, "Alerts
// and dashboard", has a section for each).
var wantAlerts = []string{
	"EtcdfleetClusterDisconnected", "EtcdfleetQuorumLost", "EtcdfleetEtcdAlarm", "EtcdfleetEtcdNearQuota", "EtcdfleetBackupBehind", "EtcdfleetBackupTooOld",
	"EtcdfleetCredentialsExpiring", "EtcdfleetCredentialsExpired", "EtcdfleetLimiterStuck",
	"EtcdfleetLimiterWaitTooLong", "EtcdfleetManagerDown", "EtcdfleetManagerReplicaDown",
}

// rule is one alerting rule as the PrometheusRule holds it.
type rule struct {
	Alert       string            `json:"alert"`
	Record      string            `json:"record"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// rulesOf returns the PrometheusRule's rules by alert name, checking the
// structure Prometheus's rule files demand on the way: named, unique
// groups; each rule an alert with an expression; known keys only.
func rulesOf(t *testing.T, pr *unstructured.Unstructured) map[string]rule {
	t.Helper()
	groups, _, err := unstructured.NestedSlice(pr.Object, "spec", "groups")
	if err != nil || len(groups) == 0 {
		t.Fatalf("PrometheusRule spec.groups: %v, %v", groups, err)
	}
	out := map[string]rule{}
	seenGroups := map[string]bool{}
	for _, g := range groups {
		g := g.(map[string]any)
		name, _ := g["name"].(string)
		if name == "" || seenGroups[name] {
			t.Errorf("group name %q is empty or repeated", name)
		}
		seenGroups[name] = true
		for _, raw := range g["rules"].([]any) {
			for k := range raw.(map[string]any) {
				if !slices.Contains([]string{"alert", "record", "expr", "for", "labels", "annotations", "keep_firing_for"}, k) {
					t.Errorf("group %s: rule key %q is not one of Prometheus's", name, k)
				}
			}
			data, _ := json.Marshal(raw)
			var r rule
			if err := json.Unmarshal(data, &r); err != nil {
				t.Fatalf("group %s: %v in %s", name, err, data)
			}
			if r.Alert == "" || r.Record != "" || r.Expr == "" {
				t.Errorf("group %s: want alerting rules with an expr, got %s", name, data)
			}
			if _, dup := out[r.Alert]; dup {
				t.Errorf("alert %s is defined twice", r.Alert)
			}
			out[r.Alert] = r
		}
	}
	return out
}

// TestPrometheusRule: the rule renders only when asked for, only with the
// Prometheus Operator's API, carries every alert with a valid for, a
// severity, its annotations and a runbook section that exists, and its
// thresholds follow the values.
func TestPrometheusRule(t *testing.T) {
	for _, o := range mustTemplate(t, mgmtChart, mgmtRelease, systemNS, monitoringAPI...) {
		if o.GetKind() == "PrometheusRule" || (o.GetKind() == "ConfigMap" && strings.HasSuffix(o.GetName(), "-dashboard")) {
			t.Errorf("rendered by default: %s/%s", o.GetKind(), o.GetName())
		}
	}
	_, err := template(t, mgmtChart, mgmtRelease, systemNS, "--set", "prometheusRule.enabled=true")
	if err == nil || !strings.Contains(err.Error(), "prometheusRule.enabled needs the monitoring.coreos.com/v1 API") {
		t.Errorf("without the API: want an error naming it, got %v", err)
	}

	objs := mustTemplate(t, mgmtChart, mgmtRelease, systemNS, append([]string{"--set", "prometheusRule.enabled=true",
		"--set", "prometheusRule.labels.release=prometheus"}, monitoringAPI...)...)
	pr := find(t, objs, "PrometheusRule", mgmtRelease)
	if pr.GetNamespace() != systemNS || pr.GetLabels()["release"] != "prometheus" {
		t.Errorf("PrometheusRule in %q labelled %v", pr.GetNamespace(), pr.GetLabels())
	}
	rules := rulesOf(t, pr)
	anchors := runbookAnchors(t)
	for _, name := range wantAlerts {
		r, ok := rules[name]
		if !ok {
			t.Errorf("alert %s is missing", name)
			continue
		}
		if r.For != "" && !promDuration.MatchString(r.For) {
			t.Errorf("%s: for %q is not a Prometheus duration", name, r.For)
		}
		if s := r.Labels["severity"]; s != "warning" && s != "critical" {
			t.Errorf("%s: severity %q", name, s)
		}
		for _, a := range []string{"summary", "description", "runbook_url"} {
			if r.Annotations[a] == "" {
				t.Errorf("%s: no %s annotation", name, a)
			}
		}
		for a, text := range r.Annotations {
			if err := checkAlertTemplate(text); err != nil {
				t.Errorf("%s: annotation %s: %v", name, a, err)
			}
		}
		url, anchor, _ := strings.Cut(r.Annotations["runbook_url"], "#")
		if !strings.HasSuffix(url, "/docs/operations.md") || !anchors[anchor] {
			t.Errorf("%s: runbook_url %q: want docs/operations.md#<a section there>", name, r.Annotations["runbook_url"])
		}
	}
	if len(rules) != len(wantAlerts) {
		t.Errorf("alerts %v, want exactly %v (add new ones to wantAlerts and the runbook)", keys(rules), wantAlerts)
	}
	if e := rules["EtcdfleetManagerDown"].Expr; !strings.Contains(e, `up{job="etcdfleet-metrics"}`) {
		t.Errorf("ManagerDown %q: want the metrics Service's job", e)
	}

	// Thresholds, job, extra alert labels and dropped alerts follow the values.
	objs = mustTemplate(t, mgmtChart, mgmtRelease, systemNS, append([]string{"--set", "prometheusRule.enabled=true",
		"--set", "prometheusRule.backupTooOld.maxAgeSeconds=900", "--set", "prometheusRule.limiterWaitTooLong.maxWaitSeconds=120",
		"--set", "prometheusRule.quorumLost.for=1m", "--set", "prometheusRule.job=my-job", "--set", "prometheusRule.alertLabels.team=storage",
		"--set", "prometheusRule.disabledAlerts={EtcdfleetManagerReplicaDown}"}, monitoringAPI...)...)
	rules = rulesOf(t, find(t, objs, "PrometheusRule", mgmtRelease))
	if e := rules["EtcdfleetBackupTooOld"].Expr; !strings.HasSuffix(e, "> 900") {
		t.Errorf("BackupTooOld %q: want > 900", e)
	}
	if e := rules["EtcdfleetLimiterWaitTooLong"].Expr; !strings.HasSuffix(e, "> 120") {
		t.Errorf("LimiterWaitTooLong %q: want > 120", e)
	}
	if f := rules["EtcdfleetQuorumLost"].For; f != "1m" {
		t.Errorf("QuorumLost for %q, want 1m", f)
	}
	if e := rules["EtcdfleetManagerDown"].Expr; !strings.Contains(e, `up{job="my-job"}`) {
		t.Errorf("ManagerDown %q: want job my-job", e)
	}
	if _, ok := rules["EtcdfleetManagerReplicaDown"]; ok {
		t.Error("a disabled alert is rendered")
	}
	for name, r := range rules {
		if r.Labels["team"] != "storage" {
			t.Errorf("%s: labels %v lack alertLabels", name, r.Labels)
		}
	}
	objs = mustTemplate(t, mgmtChart, mgmtRelease, systemNS, append([]string{"--set", "prometheusRule.enabled=true",
		"--set", "prometheusRule.backupTooOld.maxAgeSeconds=0"}, monitoringAPI...)...)
	if _, ok := rulesOf(t, find(t, objs, "PrometheusRule", mgmtRelease))["EtcdfleetBackupTooOld"]; ok {
		t.Error("backupTooOld.maxAgeSeconds=0 still renders EtcdfleetBackupTooOld")
	}
	for _, bad := range [][]string{
		{"--set", "prometheusRule.limiterWaitTooLong.maxWaitSeconds=600"}, // past the histogram's top bucket
		{"--set", "prometheusRule.quorumLost.for=5 minutes"},
		{"--set", "prometheusRule.disabledAlerts={EtcdfleetNoSuchAlert}"},
		{"--set", "prometheusRule.job=a\"b"},
		{"--set", "grafana.dashboard.enabled=yes"},
	} {
		if _, err := template(t, mgmtChart, mgmtRelease, systemNS, bad...); err == nil || !strings.Contains(err.Error(), "schema") {
			t.Errorf("%s: want a schema error, got %v", strings.Join(bad, " "), err)
		}
	}
}

// promDuration is Prometheus's duration syntax (model.ParseDuration).
var promDuration = regexp.MustCompile(`^(0|([0-9]+(ms|s|m|h|d|w|y))+)$`)

// runbookAnchors are the GitHub anchors of docs/operations.md's headings.
func runbookAnchors(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#+\s+(.+?)\s*$`).FindAllStringSubmatch(string(data), -1) {
		slug := strings.ToLower(m[1])
		slug = regexp.MustCompile(`[^a-z0-9 _-]`).ReplaceAllString(slug, "")
		out[strings.ReplaceAll(slug, " ", "-")] = true
	}
	return out
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestGrafanaDashboard: the board's ConfigMap renders only when asked
// for, with the sidecar's label, and holds the chart's board file as
// valid JSON whose every panel reads from the board's data source.
func TestGrafanaDashboard(t *testing.T) {
	objs := mustTemplate(t, mgmtChart, mgmtRelease, systemNS, "--set", "grafana.dashboard.enabled=true",
		"--set", "grafana.dashboard.annotations.grafana_folder=etcd")
	cm := find(t, objs, "ConfigMap", mgmtRelease+"-dashboard")
	if cm.GetLabels()["grafana_dashboard"] != "1" || cm.GetAnnotations()["grafana_folder"] != "etcd" || cm.GetNamespace() != systemNS {
		t.Errorf("ConfigMap %s/%s labels %v annotations %v", cm.GetNamespace(), cm.GetName(), cm.GetLabels(), cm.GetAnnotations())
	}
	text, _, _ := unstructured.NestedString(cm.Object, "data", "etcdfleet.json")
	file, err := os.ReadFile(filepath.Join(chartDir(mgmtChart), "dashboards", "etcdfleet.json"))
	if err != nil {
		t.Fatal(err)
	}
	if text != strings.TrimRight(string(file), "\n") {
		t.Error("the ConfigMap does not hold dashboards/etcdfleet.json as it is")
	}
	b := board(t, []byte(text))
	if b.UID == "" || b.Title == "" {
		t.Errorf("board uid %q title %q", b.UID, b.Title)
	}
	for _, p := range b.panels() {
		if p.Type == "row" {
			continue
		}
		if p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %+v, %d targets", p.Title, p.Datasource, len(p.Targets))
		}
	}
	for _, o := range mustTemplate(t, mgmtChart, mgmtRelease, systemNS) {
		if o.GetKind() == "ConfigMap" && o.GetName() != mgmtRelease+"-config" { // the manager's config file is always there
			t.Errorf("ConfigMap %s rendered without grafana.dashboard.enabled", o.GetName())
		}
	}
}

// grafanaBoard is what the tests read of a Grafana dashboard.
type grafanaBoard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Title      string `json:"title"`
	Type       string `json:"type"`
	Datasource struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

func board(t *testing.T, data []byte) grafanaBoard {
	t.Helper()
	var b grafanaBoard
	if err := json.Unmarshal(data, &b); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	return b
}

// panels returns every panel, those inside collapsed rows included.
func (b grafanaBoard) panels() []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(b.Panels)
	return out
}

// queries returns the board's PromQL: each panel target's expr and each
// query variable's label_values selector, named for messages.
func (b grafanaBoard) queries(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range b.panels() {
		for i, tg := range p.Targets {
			out[fmt.Sprintf("panel %q target %d", p.Title, i)] = tg.Expr
		}
	}
	labelValues := regexp.MustCompile(`^label_values\((.+),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$`)
	for _, v := range b.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			if err := json.Unmarshal(v.Query, &q.Query); err != nil {
				t.Fatalf("variable %s: query %s", v.Name, v.Query)
			}
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(<selector>, <label>)", v.Name, q.Query)
			continue
		}
		out["variable "+v.Name] = m[1]
	}
	return out
}

// grafanaMacros stand in for the macros Grafana replaces before the query
// reaches Prometheus; a variable outside a label matcher's string is left
// to fail the parse.
var grafanaMacros = strings.NewReplacer("$__rate_interval", "5m", "${__rate_interval}", "5m", "$__interval", "1m", "$__range", "1h")
