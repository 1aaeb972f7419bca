package charts_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etcdfleet/etcdfleet/fleet/settings"
)

// TestSchemaRejectsBadValues: values.schema.json stops bad values before
// anything is rendered.
func TestSchemaRejectsBadValues(t *testing.T) {
	for _, bad := range [][]string{
		{"--set", "config.etcdAccess=foo"},
		{"--set", "config.limiter.burst=0"},
		{"--set", "config.limiter.rate=0"},
		{"--set", "config.limiter.rate=-1"},
		{"--set", "config.limiter.rate=0.0"},
		{"--set", "config.limiter.rate=fast"},
		{"--set", "config.snapshots.maxConcurrent=0"},
		{"--set", "config.snapshots.startsPerMinute=0"},
		{"--set", "config.clusters.qps=-2.5"},
		{"--set", "config.workers=x"},
		{"--set", "config.workers=0"},
		{"--set", "config.workers=1.5"},
		{"--set", "config.replacement.cap=0"},
		{"--set", "config.clusters.failureThreshold=0"},
		{"--set", "config.clusters.qps=0"},
		{"--set-string", "config.limiter.burst=10"},
		{"--set", "config.replacement.window=5 minutes"},
		{"--set", "config.replacement.maxBackoff=5"},
		{"--set", "config.dashboard.resync=10"},
		{"--set", "config.clusters.probeTimeout=fast"},
		{"--set", "config.metricsBindAddress=8080"},
		{"--set", "config.healthProbeBindAddress=0"},
		{"--set", "config.leaderElection=yes"},
		{"--set", "config.leaderElectionID=Not_A_Name"},
		{"--set", "config.namespace=Bad_Namespace"},
		{"--set", "replicas=-1"},
		{"--set", "image.pullPolicy=Sometimes"},
		{"--set", "config.limiter.brust=10"}, // a typo
		{"--set", "config.typo=1"},
		// The values of releases before the config block: refused, so an
		// upgrade does not drop them silently.
		{"--set", "manager.workers=16"},
		{"--set", "limiter.rate=5"},
		{"--set", "metrics.bindAddress=:9090"},
		{"--set", "typo=1"},
		{"--set", "serviceMonitor.interval=often"},
		{"--set", "serviceMonitor.insecureSkipVerify=yes"},
		{"--set", "image.digest=latest"}, // a tag where a digest belongs
		{"--set", "image.digest=sha256:abc"},
		{"--set", "certManager.issuerRef.kind=ClusterIssuer"}, // no name
		{"--set", "certManager.issuer=ca"},
	} {
		_, err := template(t, mgmtChart, mgmtRelease, systemNS, bad...)
		if err == nil {
			t.Errorf("%s is accepted", strings.Join(bad, " "))
		} else if !strings.Contains(err.Error(), "schema") {
			t.Errorf("%s: rejected, but not by the schema: %v", strings.Join(bad, " "), err)
		}
	}
	for _, bad := range [][]string{
		{"--set", "serviceAccount.name=Bad_Name"},
		{"--set", "tokenSecret.create=maybe"},
		{"--set", "clusterWide=yes"},
		{"--set-string", "clusterWide=true"},
		{"--set", "typo=1"},
		{"--set", "watchNamespaces={Bad_NS}"},
		{"--set", "watchNamespaces={a,a}"},
		{"--set", "admissionPolicy.allowedImages={quay.io/coreos/etcd:v3.6.0}"}, // a tag: repositories only
		{"--set", "admissionPolicy.allowedImages={evil' || true || 'x}"},        // would break out of the CEL string
		{"--set", "admissionPolicy.allowedImages=null"},
		{"--set", "admissionPolicy.allowedS3Endpoints={evil' || true || 'x}"},   // would break out of the CEL string
		{"--set", "admissionPolicy.allowedS3Endpoints={http://127.0.0.1:8333}"}, // a host, not a URL
		{"--set", "admissionPolicy.allowedS3Endpoints={MinIO.local}"},
	} {
		if _, err := template(t, workloadChart, workloadRelease, systemNS, bad...); err == nil || !strings.Contains(err.Error(), "schema") {
			t.Errorf("workload chart: %s: want a schema error, got %v", strings.Join(bad, " "), err)
		}
	}
	// Good values of each kind pass.
	for _, good := range [][]string{
		{"--set", "config.limiter.rate=0.5"},
		{"--set", "config.clusters.qps=12.5"},
		{"--set", "config.replacement.window=1h30m", "--set", "config.replacement.initialBackoff=250ms", "--set-string", "config.dashboard.resync=0"},
		{"--set", "config.metricsBindAddress=0.0.0.0:9090", "--set", "config.healthProbeBindAddress=127.0.0.1:9091"},
		{"--set", "replicas=0"},
		{"--set", "global.foo=bar"},
		{"--set", "image.digest=sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		{"--set", "certManager.issuerRef.name=ca", "--set", "config.metricsSecure=false"},
	} {
		if _, err := template(t, mgmtChart, mgmtRelease, systemNS, good...); err != nil {
			t.Errorf("%s is rejected: %v", strings.Join(good, " "), err)
		}
	}
}

// TestConfigSchemaIsTheSettings: the schema of the config values has
// exactly the manager's settings, each of the JSON type its Go type loads
// from, so a setting added to its part's struct cannot be missing from
// the chart (nor one the manager dropped linger in it).
func TestConfigSchemaIsTheSettings(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartDir(mgmtChart), "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties map[string]node `json:"properties"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	got := map[string]node{}
	schemaLeaves(schema.Properties["config"], "", got)
	d := settings.Default()
	for _, s := range settings.Settings(&d) {
		n, ok := got[s.Key]
		if !ok {
			t.Errorf("the schema of config has no %s", s.Key)
			continue
		}
		delete(got, s.Key)
		var want []string // the JSON types that may hold it
		switch s.Get().(type) {
		case string:
			want = []string{"string"}
		case int, int32:
			want = []string{"integer"}
		case float64:
			want = []string{"number", "string"} // helm --set passes decimals as text
		case bool:
			want = []string{"boolean"}
		case time.Duration:
			want = []string{"string"}
		}
		if types := n.types(); len(types) == 0 || !slices.Contains(want, types[0]) {
			t.Errorf("config.%s: schema types %v, want %v for a Go %T", s.Key, types, want, s.Get())
		}
	}
	for k := range got {
		t.Errorf("the schema of config has %s, which is no setting of the manager", k)
	}
}

// node is a JSON schema, as far as this test reads it.
type node struct {
	Type       string          `json:"type"`
	AnyOf      []node          `json:"anyOf"`
	Properties map[string]node `json:"properties"`
}

func (n node) types() []string {
	if n.Type != "" {
		return []string{n.Type}
	}
	var out []string
	for _, a := range n.AnyOf {
		out = append(out, a.types()...)
	}
	return out
}

// schemaLeaves collects the settings of object schema n by dotted key.
func schemaLeaves(n node, prefix string, out map[string]node) {
	for k, sub := range n.Properties {
		if sub.Type == "object" {
			schemaLeaves(sub, prefix+k+".", out)
			continue
		}
		out[prefix+k] = sub
	}
}
