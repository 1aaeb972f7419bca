package etcdmember

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	replacements = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcdfleet_member_replacements_total",
		Help: "Destructive replacements done, by workload cluster, action and the reason the Pod died with.",
	}, []string{"cluster", "action", "reason"})
	throttled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "etcdfleet_member_replacements_throttled_total",
		Help: "Times a replacement had to wait for the shared replacement gate, by workload cluster.",
	}, []string{"cluster"})
)

func init() { metrics.Registry.MustRegister(replacements, throttled) }

// ForgetCluster drops the metric series of a disengaged cluster.
func ForgetCluster(cluster string) {
	replacements.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
	throttled.DeleteLabelValues(cluster)
}
