package limiter

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

// metrics are owned by each Limiter rather than being package globals, so
// tests and a second limiter never share counters; RegisterMetrics exposes
// them.
type metrics struct {
	wait   prometheus.Histogram
	grants *prometheus.CounterVec
}

func newMetrics() *metrics {
	return &metrics{
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "etcdfleet_limiter_wait_seconds",
			Help: "Time from a destructive action's first ask to its grant.",
			// 50ms to ~7min: an idle fleet grants at once, a power-cycled
			// one of hundreds of Pods waits minutes at the default rate.
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 14),
		}),
		grants: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etcdfleet_limiter_grants_total",
			Help: "Destructive actions granted, by workload cluster and action.",
		}, []string{"cluster", "action"}),
	}
}

func (m *metrics) grant(r gate.Request, waited time.Duration) {
	m.wait.Observe(waited.Seconds())
	m.grants.WithLabelValues(r.Cluster, string(r.Action)).Inc()
}

// forgetCluster drops a disengaged cluster's series, so churn in the fleet
// does not grow the label set forever.
func (m *metrics) forgetCluster(cluster string) {
	m.grants.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
}

// RegisterMetrics registers the limiter's metrics with reg, typically
// controller-runtime's metrics.Registry: the wait histogram, the grants
// counter, and gauges of available tokens and waiting requests read at
// scrape time.
func (l *Limiter) RegisterMetrics(reg prometheus.Registerer) error {
	tokens := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "etcdfleet_limiter_tokens_available",
		Help: "Tokens in the fleet-wide bucket now.",
	}, func() float64 { t, _ := l.gauges(); return t })
	waiting := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "etcdfleet_limiter_waiting_requests",
		Help: "Destructive actions queued for a token.",
	}, func() float64 { _, w := l.gauges(); return float64(w) })
	var errs []error
	for _, c := range []prometheus.Collector{l.metrics.wait, l.metrics.grants, tokens, waiting} {
		errs = append(errs, reg.Register(c))
	}
	return errors.Join(errs...)
}
