package app

import (
	"reflect"
	"testing"

	"github.com/etcdfleet/etcdfleet/fleet/dashboard"
	"github.com/etcdfleet/etcdfleet/fleet/limiter"
	"github.com/etcdfleet/etcdfleet/fleet/settings"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdmember"
	"github.com/etcdfleet/etcdfleet/memberctl/operator"
	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
)

// TestDefaultSettingsAreThePartsDefaults: a manager run with
// settings.Default() configures every part exactly as the part's own
// defaults would, so there is one place for each default and the mapping
// from settings to options loses or swaps nothing.
func TestDefaultSettingsAreThePartsDefaults(t *testing.T) {
	c := settings.Default()
	if got, want := memberOptions(c), etcdmember.DefaultOptions(); !reflect.DeepEqual(got, want) {
		t.Errorf("member options from the default settings:\n%+v\nwant etcdmember.DefaultOptions():\n%+v", got, want)
	}
	if lo := limiterOptions(c, nil); lo.Rate != limiter.DefaultRate || lo.Burst != limiter.DefaultBurst {
		t.Errorf("limiter rate %v burst %d; want %v and %d", lo.Rate, lo.Burst, limiter.DefaultRate, limiter.DefaultBurst)
	}
	if so := slotOptions(c, nil); so.MaxConcurrent != limiter.DefaultMaxConcurrentSnapshots || so.StartsPerMinute != limiter.DefaultSnapshotStartsPerMinute {
		t.Errorf("snapshot slots %d at %v/min; want %d and %v", so.MaxConcurrent, so.StartsPerMinute,
			limiter.DefaultMaxConcurrentSnapshots, limiter.DefaultSnapshotStartsPerMinute)
	}
	// The per-cluster and per-namespace caps have no setting on purpose:
	// the manager runs the limiter's defaults.
	if st := limiter.NewSlots(slotOptions(c, nil)).Stats(); st.MaxPerCluster != limiter.DefaultMaxSnapshotsPerCluster ||
		st.MaxPerNamespace != limiter.DefaultMaxSnapshotsPerNamespace {
		t.Errorf("snapshot caps %d per cluster, %d per namespace; want %d and %d", st.MaxPerCluster, st.MaxPerNamespace,
			limiter.DefaultMaxSnapshotsPerCluster, limiter.DefaultMaxSnapshotsPerNamespace)
	}
	if do := dashboardOptions(c); do.MinInterval != dashboard.DefaultMinInterval || do.Resync != dashboard.DefaultResync {
		t.Errorf("dashboard min interval %s resync %s; want %s and %s", do.MinInterval, do.Resync,
			dashboard.DefaultMinInterval, dashboard.DefaultResync)
	}
	if c.WorkersPerCluster != operator.DefaultWorkersPerCluster || c.ReconcileTimeout != operator.DefaultReconcileTimeout ||
		c.Clusters.RequestTimeout != operator.DefaultRequestTimeout {
		t.Errorf("workers per cluster %d, reconcile timeout %s, request timeout %s; want the operator's %d, %s and %s",
			c.WorkersPerCluster, c.ReconcileTimeout, c.Clusters.RequestTimeout,
			operator.DefaultWorkersPerCluster, operator.DefaultReconcileTimeout, operator.DefaultRequestTimeout)
	}
	po := providerOptions(c, nil)
	got := []any{po.QPS, po.Burst, po.PreflightTimeout, po.ProbeInterval, po.ProbeTimeout, po.FailureThreshold}
	want := []any{float32(kubeconfigsecret.DefaultQPS), kubeconfigsecret.DefaultBurst, kubeconfigsecret.DefaultPreflightTimeout,
		kubeconfigsecret.DefaultProbeInterval, kubeconfigsecret.DefaultProbeTimeout, kubeconfigsecret.DefaultFailureThreshold}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("provider QPS, burst, preflight, probe interval, probe timeout, failure threshold = %v; want %v", got, want)
	}
}
