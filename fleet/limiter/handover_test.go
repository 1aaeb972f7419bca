package limiter

import (
	"testing"
	"time"
)

// TestStartEmptyBoundsHandover: a standby whose bucket refilled while it
// waited for the lease grants nothing before Start and, after Start, no
// more than Rate·T (+1 for the fraction left) in the first T: the burst
// its predecessor spent is not spent again.
func TestStartEmptyBoundsHandover(t *testing.T) {
	clock := newFakeClock()
	l := New(Options{Rate: 2, Burst: 4, Now: clock.Now, StartEmpty: true})
	clock.Advance(time.Minute) // waited a minute as standby: a plain bucket is full
	for i := range 10 {
		mustWait(t, l, req("w1", i))
	}
	l.begin()
	granted := 0
	for step := 0; step < 20; step++ { // 2 s in 100 ms steps
		clock.Advance(100 * time.Millisecond)
		for i := range 10 {
			if reserve(l, req("w1", i)).Delay == 0 {
				granted++
			}
		}
	}
	if want := 2*2 + 1; granted > want {
		t.Fatalf("%d granted in the first 2 s after Start, want at most Rate·T+1 = %d", granted, want)
	}
	if granted < 3 {
		t.Fatalf("%d granted in the first 2 s after Start: the limiter must keep pacing, never halt", granted)
	}
}

// TestWithoutStartEmptyBurstIsImmediate documents the default for
// single-process users: a new limiter has its whole burst at once.
func TestWithoutStartEmptyBurstIsImmediate(t *testing.T) {
	clock := newFakeClock()
	l := New(Options{Rate: 2, Burst: 4, Now: clock.Now})
	for i := range 4 {
		mustGrant(t, l, req("w1", i))
	}
}
