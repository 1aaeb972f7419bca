package app

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdfleet/etcdfleet/fleet/dashboard"
	"github.com/etcdfleet/etcdfleet/fleet/limiter"
	"github.com/etcdfleet/etcdfleet/fleet/settings"
	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdmember"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdsnapshot"
	"github.com/etcdfleet/etcdfleet/memberctl/operator"
	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
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
	if got, want := snapshotOptions(c), etcdsnapshot.DefaultOptions(); !reflect.DeepEqual(got, want) {
		t.Errorf("snapshot options from the default settings:\n%+v\nwant etcdsnapshot.DefaultOptions():\n%+v", got, want)
	}
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

// TestSnapshotAgentSettingsReachTheJobs: the snapshotAgent.* settings
// become the agent flags of the Jobs the snapshot controller builds, and
// the slot caps the Slots' caps.
func TestSnapshotAgentSettingsReachTheJobs(t *testing.T) {
	c := settings.Default()
	c.SnapshotAgent = agent.S3Limits{ConnectTimeout: 7 * time.Second, FirstByteTimeout: 8 * time.Second, MinThroughput: 9000, ThroughputWindow: 11 * time.Second}
	c.Snapshots.MaxPerCluster, c.Snapshots.MaxPerNamespace = 3, 2
	s := &v1alpha1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s1"},
		Spec: v1alpha1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: "c"},
			Location: v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: "https://s3:9000", Bucket: "b",
				CredentialsSecretRef: corev1.LocalObjectReference{Name: "creds"}}}}}
	m := v1alpha1.EtcdMember{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c-0"}, Spec: v1alpha1.EtcdMemberSpec{ClusterName: "c"}}
	args := strings.Join(etcdsnapshot.BuildJob(s, []v1alpha1.EtcdMember{m}, snapshotOptions(c)).Spec.Template.Spec.Containers[0].Args, " ") + " "
	for _, want := range []string{"--s3-connect-timeout=7s ", "--s3-first-byte-timeout=8s ", "--s3-min-throughput=9000 ", "--s3-throughput-window=11s "} {
		if !strings.Contains(args, want) {
			t.Errorf("agent args %q lack %q", args, want)
		}
	}
	if st := limiter.NewSlots(slotOptions(c, nil)).Stats(); st.MaxPerCluster != 3 || st.MaxPerNamespace != 2 {
		t.Errorf("caps %d and %d, want the settings' 3 and 2", st.MaxPerCluster, st.MaxPerNamespace)
	}
}
