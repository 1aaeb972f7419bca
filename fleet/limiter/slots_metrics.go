package limiter

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// slotMetrics are owned by each Slots, as metrics are by each Limiter.
type slotMetrics struct {
	wait prometheus.Histogram
}

func newSlotMetrics() *slotMetrics {
	return &slotMetrics{wait: prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "etcdfleet_snapshot_start_wait_seconds",
		Help: "Time from a snapshot's first ask for a start slot to its start.",
		// 1s to ~9h: a free fleet starts at once, a thousand schedules
		// firing together wait hours at the default pace.
		Buckets: prometheus.ExponentialBuckets(1, 2, 16),
	})}
}

func (m *slotMetrics) start(waited time.Duration) { m.wait.Observe(waited.Seconds()) }

// RegisterMetrics registers the start-wait histogram and gauges of running
// and waiting snapshots, read at scrape time.
func (s *Slots) RegisterMetrics(reg prometheus.Registerer) error {
	running := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "etcdfleet_snapshot_starts_running",
		Help: "Snapshots holding a start slot (running), fleet-wide on this replica.",
	}, func() float64 { return float64(s.Stats().Running) })
	waiting := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "etcdfleet_snapshot_starts_waiting",
		Help: "Snapshots waiting for a start slot.",
	}, func() float64 { return float64(s.Stats().Waiting) })
	var errs []error
	for _, c := range []prometheus.Collector{s.metrics.wait, running, waiting} {
		errs = append(errs, reg.Register(c))
	}
	return errors.Join(errs...)
}
