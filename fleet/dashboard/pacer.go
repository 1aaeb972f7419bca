package dashboard

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// pacer is the writer's workqueue rate limiter: a request added through it
// waits until MinInterval after its last reconcile began. Each reconcile
// makes at most one write of its object, so each object is written at
// most once per MinInterval. The wait depends on time alone, unlike the
// failure-counting limiters of client-go, so a burst of Notify calls
// never pushes a request further back than one interval, and Forget has
// nothing to reset.
type pacer struct {
	interval time.Duration
	mu       sync.Mutex
	last     map[request]time.Time
}

var _ workqueue.TypedRateLimiter[request] = (*pacer)(nil)

func newPacer(interval time.Duration) *pacer {
	return &pacer{interval: interval, last: map[request]time.Time{}}
}

// When returns how long r must wait before it may be reconciled.
func (p *pacer) When(r request) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.last[r]
	if !ok {
		return 0
	}
	return max(0, time.Until(t.Add(p.interval)))
}

// Forget is a no-op: the wait is not a backoff.
func (p *pacer) Forget(request) {}

// NumRequeues is always 0: failures are not counted.
func (p *pacer) NumRequeues(request) int { return 0 }

// ran records that r's reconcile began at now.
func (p *pacer) ran(r request, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last[r] = now
}

// forget drops the records of requests gone reports as no longer needed,
// once their interval has passed, so unregistered clusters do not pile up.
func (p *pacer) forget(gone func(request) bool, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for r, t := range p.last {
		if gone(r) && now.Sub(t) >= p.interval {
			delete(p.last, r)
		}
	}
}
