package charts_test

import (
	"strings"
	"testing"
)

// nonDefault are non-default values used by the lint and render tests.
var nonDefault = []string{
	"--set", "replicas=3",
	"--set", "config.limiter.rate=5",
	"--set", "config.limiter.burst=20",
	"--set", "config.snapshots.maxConcurrent=2",
	"--set", "config.snapshots.startsPerMinute=30",
	"--set", "config.etcdAccess=direct",
	"--set", "config.workers=16",
	"--set", "config.workersPerCluster=6",
	"--set", "config.clusters.requestTimeout=3s",
	"--set", "config.replacement.initialBackoff=500ms",
	"--set", "config.replacement.window=1h30m",
	"--set", "config.clusters.probeInterval=20s",
	"--set", "config.clusters.burst=1000000",
	"--set", "serviceMonitor.enabled=true",
	"--set", "serviceMonitor.labels.release=prometheus",
	"--set", "prometheusRule.enabled=true",
	"--set", "grafana.dashboard.enabled=true",
	"--set", "config.namespace=registrations",
	"--set", "networkPolicy.enabled=true",
	"--set", "metrics.certSecret=etcdfleet-metrics-tls",
	"--set", "config.leaderElectionID=my-lease",
	"--set", "image.tag=v9.9.9",
	"--set", "podAnnotations.example\\.com/a=b",
	"--set", "nodeSelector.kubernetes\\.io/os=linux",
	"--set", "extraArgs={--zap-log-level=debug}",
	"--api-versions", "monitoring.coreos.com/v1",
}

// lintable drops what helm lint cannot take: --api-versions, and so the
// ServiceMonitor and the PrometheusRule that need it.
func lintable(args []string) []string {
	var out []string
	for i := 0; i < len(args); i += 2 {
		if args[i] == "--api-versions" || strings.HasPrefix(args[i+1], "serviceMonitor.") || strings.HasPrefix(args[i+1], "prometheusRule.") {
			continue
		}
		out = append(out, args[i], args[i+1])
	}
	return out
}

func TestLint(t *testing.T) {
	for _, c := range []struct {
		chart string
		args  []string
	}{
		{mgmtChart, nil},
		{mgmtChart, lintable(nonDefault)},
		// The workload chart has no scope by default (its render fails,
		// TestWorkloadChartScope): lint each of the two.
		{workloadChart, []string{"--set", "watchNamespaces={etcd}"}},
		{workloadChart, []string{"--set", "clusterWide=true", "--set", "tokenSecret.create=true"}},
	} {
		args := append([]string{"lint", "--strict", chartDir(c.chart), "--namespace", systemNS}, c.args...)
		if out, err := runHelm(t, args...); err != nil {
			t.Errorf("%v\n%s", err, out)
		}
	}
}
