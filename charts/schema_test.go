package charts_test

import (
	"strings"
	"testing"
)

// TestSchemaRejectsBadValues: values.schema.json stops bad values before
// anything is rendered.
func TestSchemaRejectsBadValues(t *testing.T) {
	for _, bad := range [][]string{
		{"--set", "manager.etcdAccess=foo"},
		{"--set", "limiter.burst=0"},
		{"--set", "limiter.rate=0"},
		{"--set", "limiter.rate=-1"},
		{"--set", "limiter.rate=0.0"},
		{"--set", "limiter.rate=fast"},
		{"--set", "snapshots.maxConcurrent=0"},
		{"--set", "snapshots.startsPerMinute=0"},
		{"--set", "clusters.qps=-2.5"},
		{"--set", "manager.workers=x"},
		{"--set", "manager.workers=0"},
		{"--set", "manager.workers=1.5"},
		{"--set", "replacement.cap=0"},
		{"--set", "clusters.failureThreshold=0"},
		{"--set", "clusters.qps=0"},
		{"--set-string", "limiter.burst=10"},
		{"--set", "replacement.window=5 minutes"},
		{"--set", "replacement.maxBackoff=5"},
		{"--set", "dashboard.resync=10"},
		{"--set", "clusters.probeTimeout=fast"},
		{"--set", "metrics.bindAddress=8080"},
		{"--set", "probes.bindAddress=0"},
		{"--set", "leaderElection.enabled=yes"},
		{"--set", "leaderElection.id=Not_A_Name"},
		{"--set", "namespace=Bad_Namespace"},
		{"--set", "replicas=-1"},
		{"--set", "image.pullPolicy=Sometimes"},
		{"--set", "limiter.brust=10"}, // a typo
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
		{"--set", "limiter.rate=0.5"},
		{"--set", "clusters.qps=12.5"},
		{"--set", "replacement.window=1h30m", "--set", "replacement.initialBackoff=250ms", "--set-string", "dashboard.resync=0"},
		{"--set", "metrics.bindAddress=0.0.0.0:9090", "--set", "probes.bindAddress=127.0.0.1:9091"},
		{"--set", "replicas=0"},
		{"--set", "global.foo=bar"},
		{"--set", "image.digest=sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		{"--set", "certManager.issuerRef.name=ca", "--set", "metrics.secure=false"},
	} {
		if _, err := template(t, mgmtChart, mgmtRelease, systemNS, good...); err != nil {
			t.Errorf("%s is rejected: %v", strings.Join(good, " "), err)
		}
	}
}
