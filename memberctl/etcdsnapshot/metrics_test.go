package etcdsnapshot

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// TestLastBackupSeries: the newest Complete snapshot of an EtcdCluster sets
// its series, an older one reconciled later does not move them back, a
// Failed one does not touch them, and ForgetCluster drops them.
func TestLastBackupSeries(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	snap := func(phase v1alpha1.SnapshotPhase, done time.Time, size int64) *v1alpha1.EtcdSnapshot {
		s := &v1alpha1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"},
			Spec: v1alpha1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: "main"}}}
		start, end := metav1.NewTime(done.Add(-30*time.Second)), metav1.NewTime(done)
		s.Status = v1alpha1.EtcdSnapshotStatus{Phase: phase, StartedAt: &start, CompletedAt: &end}
		if phase == v1alpha1.SnapshotComplete {
			s.Status.Artifact = &v1alpha1.SnapshotArtifact{SizeBytes: size}
		}
		return s
	}
	const cl = "metrics-test"
	observeComplete(cl, snap(v1alpha1.SnapshotComplete, t0, 100))
	observeComplete(cl, snap(v1alpha1.SnapshotComplete, t0.Add(-time.Hour), 50))
	observeComplete(cl, snap(v1alpha1.SnapshotFailed, t0.Add(time.Hour), 0))
	l := []string{cl, "ns", "main"}
	if got := testutil.ToFloat64(lastSuccess.WithLabelValues(l...)); got != float64(t0.Unix()) {
		t.Errorf("last success %v, want %v", got, t0.Unix())
	}
	if got := testutil.ToFloat64(lastSize.WithLabelValues(l...)); got != 100 {
		t.Errorf("last size %v, want 100", got)
	}
	if got := testutil.ToFloat64(lastDuration.WithLabelValues(l...)); got != 30 {
		t.Errorf("last duration %v, want 30", got)
	}
	countFinal(cl, snap(v1alpha1.SnapshotFailed, t0, 0))
	ForgetCluster(cl)
	if n := testutil.CollectAndCount(lastSuccess) + testutil.CollectAndCount(outcomes); n != 0 {
		t.Errorf("%d series left after ForgetCluster", n)
	}
}
