package limiter

import (
	"fmt"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// TestRateHolds: however requests arrive, no closed one-second window sees
// more grants than a bucket of b tokens refilled at r per second can give.
func TestRateHolds(t *testing.T) {
	const r, b = 2, 4
	s := newSim(t, Options{Rate: r, Burst: b})
	for c := range 5 {
		for m := range 20 {
			s.add(req(fmt.Sprintf("c%d", c), m), 0)
		}
	}
	s.run(2 * time.Minute)
	if !s.allDone() {
		t.Fatalf("only %d of 100 granted", len(s.grants))
	}
	for i, g := range s.grants {
		n := 0
		for _, h := range s.grants[i:] {
			if h.at <= g.at+time.Second {
				n++
			}
		}
		if n > b+r {
			t.Fatalf("%d grants in the second after %v, want <= %d", n, g.at, b+r)
		}
	}
}

// TestNeverHalts: every request is granted, and no later than the bucket
// allows: b at once, then one per 1/r.
func TestNeverHalts(t *testing.T) {
	const r, b = 2, 4
	s := newSim(t, Options{Rate: r, Burst: b})
	for c := range 30 {
		for m := range 3 {
			s.add(req(fmt.Sprintf("c%02d", c), m), 0)
		}
	}
	bound := time.Duration(float64(90-b)/r*float64(time.Second)) + 500*time.Millisecond
	s.run(bound)
	if !s.allDone() {
		t.Fatalf("%d of 90 granted by %v", len(s.grants), bound)
	}
	if got := len(s.grants); got != 90 {
		t.Fatalf("%d grant events, want 90", got)
	}
	st := s.l.Snapshot()
	if st.Waiting != 0 || st.Unclaimed != 0 || st.GrantedTotal != 90 {
		t.Fatalf("after all granted: %+v", st)
	}
}

// TestOnGrantOncePerGrant: every grant not handed to its own asker fires
// OnGrant exactly once, and the two together account for every grant.
func TestOnGrantOncePerGrant(t *testing.T) {
	s := newSim(t, Options{Rate: 5, Burst: 3})
	for c := range 6 {
		for m := range 5 {
			s.add(req(fmt.Sprintf("c%d", c), m), time.Duration(c*m)*100*time.Millisecond)
		}
	}
	s.run(time.Minute)
	async := 0
	for k, n := range s.onGrant {
		if n != 1 {
			t.Errorf("OnGrant fired %d times for %v", n, k)
		}
		async += n
	}
	if async == 0 || async == len(s.grants) {
		t.Fatalf("want both inline and notified grants, got %d notified of %d", async, len(s.grants))
	}
	if st := s.l.Snapshot(); st.GrantedTotal != uint64(len(s.grants)) || len(s.grants) != 30 {
		t.Fatalf("GrantedTotal %d, grant events %d, want 30", st.GrantedTotal, len(s.grants))
	}
}

// TestDelayEstimate: a waiting caller is told roughly when its turn comes,
// within [MinDelay, MaxDelay].
func TestDelayEstimate(t *testing.T) {
	clock := newFakeClock()
	l := New(Options{Rate: 2, Burst: 1, Now: clock.Now, MaxDelay: 1200 * time.Millisecond})
	if d := reserve(l, req("a", 0)); d.Delay != 0 {
		t.Fatalf("first request waits %v", d.Delay)
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 1200 * time.Millisecond}
	for i, w := range want {
		if d := reserve(l, req(fmt.Sprintf("c%d", i), 0)); d.Delay != w {
			t.Errorf("request %d: Delay %v, want %v", i, d.Delay, w)
		}
	}
	clock.Advance(490 * time.Millisecond)
	if d := reserve(l, req("c0", 0)); d.Delay != DefaultMinDelay {
		t.Errorf("10ms before its token: Delay %v, want the floor %v", d.Delay, DefaultMinDelay)
	}
}

func TestDefaults(t *testing.T) {
	st := New(Options{Rate: -1}).Snapshot()
	if st.Rate != float64(DefaultRate) || st.Burst != DefaultBurst || st.TokensAvailable != DefaultBurst {
		t.Fatalf("defaults: %+v", st)
	}
	inf := New(Options{Rate: rate.Inf, Burst: 1})
	for m := range 5 {
		d := reserve(inf, req("a", m))
		if d.Delay != 0 {
			t.Fatalf("infinite rate throttled request %d by %v", m, d.Delay)
		}
		d.Cancel()
	}
	if st := inf.Snapshot(); st.TokensAvailable != 1 {
		t.Fatalf("infinite rate: %+v", st)
	}
}
