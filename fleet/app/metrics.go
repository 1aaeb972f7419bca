package app

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/etcdfleet/etcdfleet/fleet/limiter"
)

// limiterMetrics serves the limiter's etcdfleet_limiter_* series and the
// snapshot slots' etcdfleet_snapshot_start* series on the
// manager's /metrics (controller-runtime's metrics.Registry) while the
// manager runs. It registers on Start and unregisters on stop rather than
// in New, so that a process may build and stop one fleet after another
// (the tests do) without the second one's registration colliding.
type limiterMetrics struct {
	l *limiter.Limiter
	s *limiter.Slots
}

func (m limiterMetrics) Start(ctx context.Context) error {
	reg := &unregisterer{Registerer: metrics.Registry}
	defer reg.unregisterAll()
	if err := RegisterRunMetrics(reg, m.l, m.s); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// RegisterRunMetrics registers on reg what a running manager adds to the
// families its packages register at init: the limiter's and the snapshot
// slots' series. It is exported for servedmetrics, which lists every
// family /metrics serves (for promlint and the chart's alerts), so that
// list cannot drift from what Start registers.
func RegisterRunMetrics(reg prometheus.Registerer, l *limiter.Limiter, s *limiter.Slots) error {
	if err := l.RegisterMetrics(reg); err != nil {
		return fmt.Errorf("register the limiter metrics: %w", err)
	}
	if err := s.RegisterMetrics(reg); err != nil {
		return fmt.Errorf("register the snapshot slot metrics: %w", err)
	}
	return nil
}

// NeedLeaderElection: a standby serves the series too (at their idle
// values), so dashboards see every replica.
func (limiterMetrics) NeedLeaderElection() bool { return false }

// unregisterer remembers what it registered, to unregister it all again.
type unregisterer struct {
	prometheus.Registerer
	done []prometheus.Collector
}

func (u *unregisterer) Register(c prometheus.Collector) error {
	err := u.Registerer.Register(c)
	if err == nil {
		u.done = append(u.done, c)
	}
	return err
}

func (u *unregisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := u.Register(c); err != nil {
			panic(err)
		}
	}
}

func (u *unregisterer) unregisterAll() {
	for _, c := range u.done {
		u.Registerer.Unregister(c)
	}
}
