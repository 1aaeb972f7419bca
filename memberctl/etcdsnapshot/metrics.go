package etcdsnapshot

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// Per EtcdCluster series are labelled with the workload cluster, the
// namespace and the EtcdCluster's name.
var (
	clusterLabels = []string{"cluster", "namespace", "etcdcluster"}

	lastSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcdfleet_snapshot_last_success_timestamp_seconds",
		Help: "When the newest Complete EtcdSnapshot of an EtcdCluster completed (Unix seconds); alert on time() minus it.",
	}, clusterLabels)
	lastSize = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcdfleet_snapshot_last_size_bytes",
		Help: "Size of the newest Complete EtcdSnapshot of an EtcdCluster.",
	}, clusterLabels)
	lastDuration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcdfleet_snapshot_last_duration_seconds",
		Help: "Time from Job creation to completion of the newest Complete EtcdSnapshot of an EtcdCluster.",
	}, clusterLabels)
	outcomes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcdfleet_snapshots_total",
		Help: "EtcdSnapshots that reached a final phase, by workload cluster and phase (Complete or Failed).",
	}, []string{"cluster", "phase"})
)

func init() { metrics.Registry.MustRegister(lastSuccess, lastSize, lastDuration, outcomes) }

// countFinal counts a snapshot that just reached its final phase in
// workload cluster cluster.
func countFinal(cluster string, s *v1alpha1.EtcdSnapshot) {
	outcomes.WithLabelValues(cluster, string(s.Status.Phase)).Inc()
}

// observeComplete moves the EtcdCluster's last-backup series to s when s
// is Complete and newer than what they show. It runs on every reconcile of
// a Complete snapshot, so a restarted manager shows them again.
func observeComplete(cluster string, s *v1alpha1.EtcdSnapshot) {
	if s.Status.Phase != v1alpha1.SnapshotComplete || s.Status.Artifact == nil || s.Status.CompletedAt == nil {
		return
	}
	l := prometheus.Labels{"cluster": cluster, "namespace": s.Namespace, "etcdcluster": s.Spec.ClusterRef.Name}
	done := s.Status.CompletedAt.Time
	// A snapshot that completed before the newest one seen (an old
	// object reconciled late) does not move the series back.
	if g, err := lastSuccess.GetMetricWith(l); err == nil && currentValue(g) > float64(done.Unix()) {
		return
	}
	lastSuccess.With(l).Set(float64(done.Unix()))
	lastSize.With(l).Set(float64(s.Status.Artifact.SizeBytes))
	if s.Status.StartedAt != nil {
		lastDuration.With(l).Set(done.Sub(s.Status.StartedAt.Time).Seconds())
	}
}

func currentValue(g prometheus.Gauge) float64 {
	var m dto.Metric
	if err := g.Write(&m); err != nil || m.Gauge == nil {
		return 0
	}
	return m.Gauge.GetValue()
}

// ForgetCluster drops the metric series of a disengaged cluster.
func ForgetCluster(cluster string) {
	for _, v := range []*prometheus.GaugeVec{lastSuccess, lastSize, lastDuration} {
		v.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
	}
	outcomes.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
}
