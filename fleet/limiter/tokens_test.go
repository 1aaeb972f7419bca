package limiter

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

func reserve(l *Limiter, r gate.Request) gate.Decision {
	return l.Reserve(context.Background(), r)
}

// recorder collects OnGrant calls.
type recorder struct {
	mu   sync.Mutex
	reqs []gate.Request
}

func (r *recorder) OnGrant(q gate.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, q)
}

func (r *recorder) take() []gate.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.reqs
	r.reqs = nil
	return out
}

// starved returns a limiter with one token and a rate so low that none
// accrues during a test: only returned tokens can grant anything.
func starved(t *testing.T, opts Options) (*Limiter, *fakeClock, *recorder) {
	t.Helper()
	clock, rec := newFakeClock(), &recorder{}
	opts.Rate, opts.Burst, opts.Now, opts.OnGrant = 1e-6, 1, clock.Now, rec.OnGrant
	return New(opts), clock, rec
}

func mustWait(t *testing.T, l *Limiter, r gate.Request) {
	t.Helper()
	if d := reserve(l, r); d.Delay == 0 {
		t.Fatalf("%v granted, want to wait", r)
	}
}

func mustGrant(t *testing.T, l *Limiter, r gate.Request) gate.Decision {
	t.Helper()
	d := reserve(l, r)
	if d.Delay != 0 {
		t.Fatalf("%v told to wait %v, want granted", r, d.Delay)
	}
	return d
}

func wantWoken(t *testing.T, rec *recorder, want ...gate.Request) {
	t.Helper()
	if got := rec.take(); !slices.Equal(got, want) {
		t.Fatalf("OnGrant calls %v, want %v", got, want)
	}
}

func TestCancelReturnsToken(t *testing.T) {
	l, _, rec := starved(t, Options{})
	a, b, c := req("a", 0), req("b", 0), req("c", 0)
	da := mustGrant(t, l, a)
	mustWait(t, l, b)
	da.Cancel()
	wantWoken(t, rec, b)
	db := mustGrant(t, l, b)
	da.Cancel() // a second Cancel must not mint a token
	mustWait(t, l, c)
	db.Cancel()
	wantWoken(t, rec, c)
	mustGrant(t, l, c)
	mustWait(t, l, a)
	reserve(l, a).Cancel() // Cancel of a wait is a no-op
	mustWait(t, l, a)
	if st := l.Snapshot(); st.TokensAvailable > 1e-3 || st.ReturnedTotal != 2 || st.Waiting != 1 {
		t.Fatalf("after double cancel: %+v", st)
	}
}

// TestRefundCappedAtBurst: a token returned to a full bucket is lost, as in
// any token bucket, so cancels never allow more than Burst at once.
func TestRefundCappedAtBurst(t *testing.T) {
	clock := newFakeClock()
	l := New(Options{Rate: 2, Burst: 2, Now: clock.Now})
	d0, d1 := mustGrant(t, l, req("a", 0)), mustGrant(t, l, req("a", 1))
	clock.Advance(500 * time.Millisecond)
	d0.Cancel()
	if got := l.Snapshot().TokensAvailable; got != 2 {
		t.Fatalf("1 accrued + 1 returned: %v tokens, want 2", got)
	}
	clock.Advance(10 * time.Second)
	d1.Cancel()
	for m := range 2 {
		mustGrant(t, l, req("b", m))
	}
	mustWait(t, l, req("b", 2))
}

func TestExpiredGrantReturnsToken(t *testing.T) {
	l, clock, rec := starved(t, Options{GrantTTL: 30 * time.Second, QueueTTL: time.Minute})
	a, b, c := req("a", 0), req("b", 0), req("c", 0)
	da := mustGrant(t, l, a)
	mustWait(t, l, b)
	mustWait(t, l, c)
	da.Cancel()
	wantWoken(t, rec, b) // b never comes back for it
	clock.Advance(29 * time.Second)
	l.step()
	wantWoken(t, rec)
	clock.Advance(2 * time.Second)
	l.step()
	wantWoken(t, rec, c)
	mustGrant(t, l, c)
	mustWait(t, l, b) // too late: b queues again
}

func TestAbandonedRequestDropped(t *testing.T) {
	l, clock, _ := starved(t, Options{QueueTTL: 30 * time.Second})
	mustGrant(t, l, req("a", 0))
	mustWait(t, l, req("b", 0))
	mustWait(t, l, req("c", 0))
	clock.Advance(20 * time.Second)
	mustWait(t, l, req("c", 0))
	clock.Advance(15 * time.Second)
	l.step()
	st := l.Snapshot()
	if st.Waiting != 1 || st.WaitingByCluster["c"] != 1 {
		t.Fatalf("want only c waiting after b went silent: %+v", st)
	}
}

func TestForgetClusterReturnsTokens(t *testing.T) {
	l, _, rec := starved(t, Options{})
	y0, x1, x2, y1 := req("y", 0), req("x", 1), req("x", 2), req("y", 1)
	d := mustGrant(t, l, y0)
	mustWait(t, l, x1)
	mustWait(t, l, x2)
	mustWait(t, l, y1)
	d.Cancel()
	wantWoken(t, rec, x1) // x is first in the ring; its grant is unclaimed
	l.ForgetCluster("x")
	wantWoken(t, rec, y1)
	st := l.Snapshot()
	if st.Waiting != 0 || st.Unclaimed != 1 || len(st.WaitingByCluster) != 0 || st.ThrottledByCluster["x"] != 0 {
		t.Fatalf("after forgetting x: %+v", st)
	}
	mustGrant(t, l, y1)
}

// TestStartGrantsWithoutAsking: Start's loop hands out tokens as they accrue
// and wakes the waiting members, with no Reserve call arriving.
func TestStartGrantsWithoutAsking(t *testing.T) {
	got := make(chan gate.Request, 10)
	l := New(Options{Rate: 50, Burst: 1, OnGrant: func(r gate.Request) { got <- r }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- l.Start(ctx) }()
	mustGrant(t, l, req("a", 0))
	for m := range 3 {
		mustWait(t, l, req("b", m))
	}
	for m := range 3 {
		select {
		case r := <-got:
			if r != req("b", m) {
				t.Fatalf("woke %v, want %v", r, req("b", m))
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no grant for b/%d without asking", m)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Start: %v", err)
	}
}

// TestConcurrentUse is for -race: many reconcilers, cancels, snapshots,
// scrapes and forgotten clusters at once, with Start running.
func TestConcurrentUse(t *testing.T) {
	l := New(Options{Rate: 2000, Burst: 20, OnGrant: func(gate.Request) {}})
	reg := prometheus.NewRegistry()
	if err := l.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = l.Start(ctx) }()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 500 {
				r := req(string(rune('a'+(w+i)%12)), i%7)
				r.QuorumLost = i%5 == 0
				if d := reserve(l, r); d.Delay == 0 && i%3 == 0 {
					d.Cancel()
				}
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			l.Snapshot()
			_, _ = reg.Gather()
			l.ForgetCluster("c")
		}
	})
	wg.Wait()
}

func TestMetrics(t *testing.T) {
	l, _, _ := starved(t, Options{})
	reg := prometheus.NewRegistry()
	if err := l.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	mustGrant(t, l, req("a", 0))
	mustWait(t, l, req("b", 0))
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		m := f.GetMetric()[0]
		switch {
		case m.Histogram != nil:
			got[f.GetName()] = float64(m.Histogram.GetSampleCount())
		case m.Counter != nil:
			got[f.GetName()] = m.Counter.GetValue()
		default:
			got[f.GetName()] = m.Gauge.GetValue()
		}
	}
	want := map[string]float64{
		"etcdfleet_limiter_wait_seconds":     1,
		"etcdfleet_limiter_grants_total":     1,
		"etcdfleet_limiter_tokens_available": 0,
		"etcdfleet_limiter_waiting_requests": 1,
	}
	for name, v := range want {
		if g, ok := got[name]; !ok || g > v+1e-3 || g < v-1e-3 {
			t.Errorf("%s = %v (present %v), want %v", name, g, ok, v)
		}
	}
	if err := l.RegisterMetrics(reg); err == nil {
		t.Error("registering twice succeeded")
	}
}
