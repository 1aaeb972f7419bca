package settings

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

const (
	beginTable = "<!-- BEGIN GENERATED: settings -->\n"
	endTable   = "<!-- END GENERATED: settings -->"
)

// TestDocIsComplete fails when docs/configuration.md does not list every
// setting exactly as the code defines it. UPDATE_DOCS=1 rewrites the table.
func TestDocIsComplete(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "configuration.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, beginTable), strings.Index(doc, endTable)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the generated settings markers", path)
	}
	want := doc[:i+len(beginTable)] + Markdown() + doc[j:]
	if want == doc {
		return
	}
	if os.Getenv("UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("%s is out of date with settings.Settings; run: UPDATE_DOCS=1 go test ./fleet/settings/", path)
}

func TestPrecedenceFileEnvFlag(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(file, []byte("limiter:\n  rate: 3\n  burst: 7\nworkers: 2\nclusters:\n  probeInterval: 20s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ETCDFLEET_LIMITER_BURST", "9")
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	AddFlags(fs)
	if err := fs.Parse([]string{"--config", file, "--workers", "5"}); err != nil {
		t.Fatal(err)
	}
	c, err := Load(fs)
	if err != nil {
		t.Fatal(err)
	}
	if c.Limiter.Rate != 3 || c.Limiter.Burst != 9 || c.Workers != 5 || c.Clusters.ProbeInterval != 20*time.Second {
		t.Fatalf("got rate %v burst %d workers %d probe %s; want file 3, env 9, flag 5, file 20s",
			c.Limiter.Rate, c.Limiter.Burst, c.Workers, c.Clusters.ProbeInterval)
	}
	if c.Namespace != Default().Namespace {
		t.Fatalf("unset values keep their default: %q", c.Namespace)
	}
}

func TestValidateNamesTheSetting(t *testing.T) {
	c := Default()
	c.Limiter.Rate = 0
	c.EtcdAccess = "carrier-pigeon"
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "limiter.rate") || !strings.Contains(err.Error(), "etcdAccess") {
		t.Fatalf("Validate() = %v; want errors naming limiter.rate and etcdAccess", err)
	}
	if err := Default().Validate(); err != nil {
		t.Fatalf("defaults must be valid: %v", err)
	}
}

func TestValidateNamesEveryBadDuration(t *testing.T) {
	c := Default()
	c.Clusters.ProbeTimeout, c.Dashboard.Resync, c.Replacement.Window = 0, -time.Second, 0
	err := c.Validate()
	if err == nil {
		t.Fatal("durations <= 0 accepted")
	}
	for _, key := range []string{"clusters.probeTimeout", "dashboard.resync", "replacement.window"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("the error does not name %s: %v", key, err)
		}
	}
	if err := Default().Validate(); err != nil {
		t.Fatalf("the defaults are invalid: %v", err)
	}
}

// Fewer workers than workersPerCluster is an error that names both, so a
// user lowering --workers learns what else to lower.
func TestValidateWorkersPerClusterAtMostWorkers(t *testing.T) {
	c := Default()
	c.Workers = 2
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "workersPerCluster") || !strings.Contains(err.Error(), "workers (2)") {
		t.Fatalf("Validate() = %v; want an error naming workersPerCluster and workers", err)
	}
	c.WorkersPerCluster = 2
	if err := c.Validate(); err != nil {
		t.Fatalf("workersPerCluster equal to workers (no cap) is valid: %v", err)
	}
}

// TestEverySettingIsDescribed: each setting has a key, flag and help of
// its own, so --help, the docs and the chart describe them all.
func TestEverySettingIsDescribed(t *testing.T) {
	keys, flags := map[string]bool{}, map[string]bool{}
	for _, s := range Settings(new(Config)) {
		if s.Key == "" || s.Flag == "" || s.Help == "" || keys[s.Key] || flags[s.Flag] {
			t.Errorf("setting %+v: want a key, flag and help, each unique", s)
		}
		keys[s.Key], flags[s.Flag] = true, true
	}
}

// TestKeysAndFlagsKept pins the config keys and flags that deployments
// and config files use: moving a setting into its part's struct must not
// rename it (new settings need no line here).
func TestKeysAndFlagsKept(t *testing.T) {
	want := map[string]string{
		"namespace": "namespace", "etcdAccess": "etcd-access", "workers": "workers",
		"workersPerCluster": "workers-per-cluster", "reconcileTimeout": "reconcile-timeout",
		"limiter.rate": "limiter-rate", "limiter.burst": "limiter-burst",
		"snapshots.maxConcurrent": "snapshots-max-concurrent", "snapshots.startsPerMinute": "snapshots-starts-per-minute",
		"replacement.initialBackoff": "replacement-initial-backoff", "replacement.maxBackoff": "replacement-max-backoff",
		"replacement.cap": "replacement-cap", "replacement.window": "replacement-window",
		"replacement.healthyReset": "replacement-healthy-reset",
		"clusters.qps":             "cluster-qps", "clusters.burst": "cluster-burst", "clusters.requestTimeout": "cluster-request-timeout",
		"clusters.preflightTimeout": "cluster-preflight-timeout", "clusters.probeInterval": "cluster-probe-interval",
		"clusters.probeTimeout": "cluster-probe-timeout", "clusters.failureThreshold": "cluster-failure-threshold",
		"dashboard.minInterval": "dashboard-min-interval", "dashboard.resync": "dashboard-resync",
		"metricsBindAddress": "metrics-bind-address", "metricsSecure": "metrics-secure", "metricsCertDir": "metrics-cert-dir",
		"healthProbeBindAddress": "health-probe-bind-address", "leaderElection": "leader-elect",
		"leaderElectionID": "leader-election-id", "agentImage": "agent-image",
		"ensureWorkloadCRDs": "ensure-workload-crds", "allowUnconstrained": "allow-unconstrained",
		"sharding.enabled": "shard", "sharding.replicaID": "shard-replica-id",
		"sharding.leaseDuration": "shard-lease-duration", "sharding.syncInterval": "shard-sync-interval",
	}
	got := map[string]string{}
	for _, s := range Settings(new(Config)) {
		got[s.Key] = s.Flag
	}
	for k, f := range want {
		if got[k] != f {
			t.Errorf("config key %s: flag %q, want --%s", k, got[k], f)
		}
	}
}

// TestFlagsLoadIntoTheirFields: every flag, set to a value other than its
// default, reaches its own field (a tag naming the wrong key would set
// another field, or none).
func TestFlagsLoadIntoTheirFields(t *testing.T) {
	d := Default()
	for _, s := range Settings(&d) {
		var val string
		switch v := s.Get().(type) {
		case string:
			val = "x" + v
		case int, int32:
			val = "3"
		case float64:
			val = "0.25"
		case bool:
			val = fmt.Sprint(!v)
		case time.Duration:
			val = "7m"
		}
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		AddFlags(fs)
		if err := fs.Parse([]string{"--" + s.Flag + "=" + val}); err != nil {
			t.Fatal(err)
		}
		got, err := load(fs)
		if err != nil {
			t.Fatal(err)
		}
		want := Settings(&d)
		for i, o := range Settings(&got) {
			if changed := o.Value() != want[i].Value(); changed != (o.Key == s.Key) {
				t.Errorf("--%s=%s: setting %s changed=%v", s.Flag, val, o.Key, changed)
			}
		}
	}
}
