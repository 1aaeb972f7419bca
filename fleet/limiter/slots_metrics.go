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
// and waiting snapshots, read at scrape time; the waiting gauge has a
// reason label (SlotWaitReason), summing to all waiting snapshots.
func (s *Slots) RegisterMetrics(reg prometheus.Registerer) error {
	running := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "etcdfleet_snapshot_starts_running",
		Help: "Snapshots holding a start slot (running), fleet-wide on this replica.",
	}, func() float64 { return float64(s.Stats().Running) })
	waiting := &waitingCollector{s: s, desc: prometheus.NewDesc("etcdfleet_snapshot_starts_waiting",
		"Snapshots waiting for a start slot, by reason: FleetLimit (the fleet-wide limits), ClusterCap or NamespaceCap "+
			"(their workload cluster or namespace runs as many snapshots as its cap allows).",
		[]string{"reason"}, nil)}
	var errs []error
	for _, c := range []prometheus.Collector{s.metrics.wait, running, waiting} {
		errs = append(errs, reg.Register(c))
	}
	return errors.Join(errs...)
}

// waitingCollector exports the waiting gauge per reason from one Stats, so
// the reasons of a scrape add up to one moment's waiting count. Every
// reason is exported, zeros too, so a query sees a series before the
// first snapshot waits for it.
type waitingCollector struct {
	s    *Slots
	desc *prometheus.Desc
}

func (c *waitingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *waitingCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	for _, r := range slotWaitReasons {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(st.WaitingFor[r]), string(r))
	}
}
