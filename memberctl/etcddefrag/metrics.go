package etcddefrag

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// Per EtcdCluster series are labelled with the workload cluster, the
// namespace and the EtcdCluster's name.
var (
	clusterLabels = []string{"cluster", "namespace", "etcdcluster"}

	lastRun = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcdfleet_defrag_last_run_timestamp_seconds",
		Help: "When the newest finished EtcdDefrag of an EtcdCluster finished, Complete or Failed (Unix seconds).",
	}, clusterLabels)
	lastSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcdfleet_defrag_last_success_timestamp_seconds",
		Help: "When the newest Complete EtcdDefrag of an EtcdCluster completed (Unix seconds).",
	}, clusterLabels)
	lastReclaimed = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcdfleet_defrag_last_reclaimed_bytes",
		Help: "Bytes of database files the newest finished EtcdDefrag of an EtcdCluster gave back, summed over its members.",
	}, clusterLabels)
	reclaimed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcdfleet_defrag_reclaimed_bytes_total",
		Help: "Bytes of database files given back by the EtcdDefrags this manager finished, per EtcdCluster.",
	}, clusterLabels)
	outcomes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcdfleet_defrags_total",
		Help: "EtcdDefrags that reached a final phase, by workload cluster and phase (Complete or Failed).",
	}, []string{"cluster", "phase"})
)

func init() {
	metrics.Registry.MustRegister(lastRun, lastSuccess, lastReclaimed, reclaimed, outcomes)
}

func labelsOf(cluster string, d *v1alpha1.EtcdDefrag) prometheus.Labels {
	return prometheus.Labels{"cluster": cluster, "namespace": d.Namespace, "etcdcluster": d.Spec.ClusterRef.Name}
}

// countFinal counts a defrag that just reached its final phase.
func countFinal(cluster string, d *v1alpha1.EtcdDefrag) {
	outcomes.WithLabelValues(cluster, string(d.Status.Phase)).Inc()
	reclaimed.With(labelsOf(cluster, d)).Add(float64(d.Status.ReclaimedBytes))
}

// newest remembers, per series, the completion time shown, so that an old
// EtcdDefrag reconciled late (after a restart, every one is) does not move
// the last-run series back.
var newest sync.Map // labels key -> time.Time

// observeFinal moves the EtcdCluster's last-run series to d when d is
// final and newer than what they show.
func observeFinal(cluster string, d *v1alpha1.EtcdDefrag) {
	if !d.Status.Phase.Terminal() || d.Status.CompletedAt == nil {
		return
	}
	l := labelsOf(cluster, d)
	done := d.Status.CompletedAt.Time
	key := cluster + "/" + d.Namespace + "/" + d.Spec.ClusterRef.Name
	if prev, ok := newest.Load(key); ok && prev.(time.Time).After(done) {
		return
	}
	newest.Store(key, done)
	lastRun.With(l).Set(float64(done.Unix()))
	lastReclaimed.With(l).Set(float64(d.Status.ReclaimedBytes))
	if d.Status.Phase == v1alpha1.DefragComplete {
		lastSuccess.With(l).Set(float64(done.Unix()))
	}
}

// ForgetCluster drops the metric series of a disengaged cluster.
func ForgetCluster(cluster string) {
	l := prometheus.Labels{"cluster": cluster}
	for _, v := range []*prometheus.GaugeVec{lastRun, lastSuccess, lastReclaimed} {
		v.DeletePartialMatch(l)
	}
	reclaimed.DeletePartialMatch(l)
	outcomes.DeletePartialMatch(l)
	newest.Range(func(k, _ any) bool {
		if len(k.(string)) > len(cluster) && k.(string)[:len(cluster)+1] == cluster+"/" {
			newest.Delete(k)
		}
		return true
	})
}
