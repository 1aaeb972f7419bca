package etcdbackup

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// Restore drill series, per EtcdCluster labelled like the snapshot series
// (memberctl/etcdsnapshot): workload cluster, namespace, EtcdCluster.
var (
	drillLabels = []string{"cluster", "namespace", "etcdcluster"}

	drillLastSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcdfleet_restore_drill_last_success_timestamp_seconds",
		Help: "When the newest passed restore drill (spec.backup.verify) of an EtcdCluster ended (Unix seconds); alert on time() minus it.",
	}, drillLabels)
	drillLastDuration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcdfleet_restore_drill_last_duration_seconds",
		Help: "How long the newest passed restore drill of an EtcdCluster took: download, checks, restore, start, read.",
	}, drillLabels)
	drillLastRevision = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcdfleet_restore_drill_last_revision",
		Help: "The revision the throwaway etcd served in the newest passed restore drill of an EtcdCluster.",
	}, drillLabels)
	drillOutcomes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcdfleet_restore_drills_total",
		Help: "Restore drills that ended, by workload cluster and RestoreVerified reason.",
	}, []string{"cluster", "reason"})
)

func init() {
	metrics.Registry.MustRegister(drillLastSuccess, drillLastDuration, drillLastRevision, drillOutcomes)
}

// observeDrill records a drill of ec (in workload cluster cluster) that
// just ended with st.
func observeDrill(cluster string, ec *v1alpha1.EtcdCluster, st drillStep) {
	drillOutcomes.WithLabelValues(cluster, st.condition.Reason).Inc()
	if st.condition.Reason != v1alpha1.ReasonRestoreDrillPassed {
		return
	}
	l := prometheus.Labels{"cluster": cluster, "namespace": ec.Namespace, "etcdcluster": ec.Name}
	drillLastSuccess.With(l).Set(float64(st.status.CompletionTime.Unix()))
	drillLastRevision.With(l).Set(float64(st.status.Revision))
	if d := st.status.Duration; d != nil {
		drillLastDuration.With(l).Set(d.Seconds())
	}
}

// forgetDrill drops ec's series once it has no drill (spec.backup.verify
// unset, or the cluster gone), so that a stale success does not stand.
func forgetDrill(cluster string, ec *v1alpha1.EtcdCluster) {
	l := prometheus.Labels{"cluster": cluster, "namespace": ec.Namespace, "etcdcluster": ec.Name}
	drillLastSuccess.Delete(l)
	drillLastDuration.Delete(l)
	drillLastRevision.Delete(l)
}
