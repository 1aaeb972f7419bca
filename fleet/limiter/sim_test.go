package limiter

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

// fakeClock is a settable clock; the limiter reads it under its own lock,
// so it needs one of its own for Start-free concurrent use.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func req(cluster string, member int) gate.Request {
	return gate.Request{
		Cluster: cluster, Namespace: "ns", EtcdCluster: "etcd",
		Member: fmt.Sprintf("m%03d", member), Action: gate.TerminalPodDelete,
	}
}

// simReq is a reconcile loop for one member, as memberctl runs it.
type simReq struct {
	req      gate.Request
	arrive   time.Duration // simulated time of the first ask
	nextAsk  time.Duration
	done     bool
	granted  bool // OnGrant seen and not yet claimed
	constant bool // re-asks every tick, ignoring Delay (a flapping cluster)
	recur    bool // asks again as soon as its action is done (the Pod flaps)
}

// grantEvent is a token being taken, by OnGrant or inline.
type grantEvent struct {
	at  time.Duration
	req gate.Request
}

// sim drives a Limiter on a fake clock in fixed ticks: each tick runs one
// step of Start's loop, then lets every due reconcile ask. Callers requeue
// after Delay, or at once when OnGrant names them.
type sim struct {
	t       *testing.T
	clock   *fakeClock
	start   time.Time
	l       *Limiter
	tick    time.Duration
	reqs    []*simReq
	byKey   map[key]*simReq
	grants  []grantEvent
	onGrant map[key]int
}

func newSim(t *testing.T, opts Options) *sim {
	s := &sim{t: t, clock: newFakeClock(), tick: 10 * time.Millisecond,
		byKey: map[key]*simReq{}, onGrant: map[key]int{}}
	s.start = s.clock.Now()
	opts.Now = s.clock.Now
	opts.OnGrant = s.handleGrant
	s.l = New(opts)
	return s
}

func (s *sim) now() time.Duration { return s.clock.Now().Sub(s.start) }

// add schedules a reconcile asking for r at simulated time arrive.
func (s *sim) add(r gate.Request, arrive time.Duration) *simReq {
	sr := &simReq{req: r, arrive: arrive, nextAsk: arrive}
	s.reqs = append(s.reqs, sr)
	s.byKey[keyOf(r)] = sr
	return sr
}

func (s *sim) handleGrant(r gate.Request) {
	k := keyOf(r)
	s.onGrant[k]++
	s.grants = append(s.grants, grantEvent{s.now(), r})
	sr := s.byKey[k]
	if sr == nil || sr.done || sr.granted {
		s.t.Errorf("OnGrant for %v which is not waiting", k)
		return
	}
	sr.granted = true
	sr.nextAsk = s.now() // the controller requeues the member at once
}

// ask lets sr reconcile once.
func (s *sim) ask(sr *simReq) {
	d := s.l.Reserve(context.Background(), sr.req)
	if d.Delay > 0 {
		if sr.granted {
			s.t.Errorf("%v notified but told to wait %v", sr.req, d.Delay)
		}
		sr.nextAsk = s.now() + d.Delay
		return
	}
	if !sr.granted {
		s.grants = append(s.grants, grantEvent{s.now(), sr.req})
	}
	sr.granted = false
	if sr.recur {
		sr.nextAsk = s.now() + s.tick
		return
	}
	sr.done = true
}

// run advances the simulation until all requests are done or until limit.
func (s *sim) run(limit time.Duration) {
	for s.now() <= limit {
		s.l.step()
		all := true
		for _, sr := range s.reqs {
			if sr.done {
				continue
			}
			all = false
			due := sr.nextAsk <= s.now() || (sr.constant && sr.arrive <= s.now())
			if due {
				s.ask(sr)
			}
		}
		if all {
			return
		}
		s.clock.Advance(s.tick)
	}
}

// firstGrant returns, per cluster, when its first token was taken.
func (s *sim) firstGrant() map[string]time.Duration {
	first := map[string]time.Duration{}
	for _, g := range s.grants {
		if _, ok := first[g.req.Cluster]; !ok {
			first[g.req.Cluster] = g.at
		}
	}
	return first
}

func (s *sim) allDone() bool {
	for _, sr := range s.reqs {
		if !sr.done {
			return false
		}
	}
	return true
}
