package rotation

import (
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	month := t0.Add(30 * day)
	for _, c := range []struct {
		name          string
		p             Policy
		now, iss, exp time.Time
		want          Action
		wantAt        time.Time
	}{
		{"fresh token waits for a third of its lifetime left", Policy{}, t0, t0, month, Wait, t0.Add(20 * day)},
		{"due with a third left", Policy{}, t0.Add(20 * day), t0, month, Rotate, t0.Add(20 * day)},
		{"due after a missed rotation", Policy{}, t0.Add(29 * day), t0, month, Rotate, t0.Add(29 * day)},
		{"expired is too late", Policy{}, month, t0, month, Expired, time.Time{}},
		{"long expired", Policy{}, month.Add(day), t0, month, Expired, time.Time{}},
		{"a window rotates that long before expiry", Policy{Window: 3 * day}, t0, t0, month, Wait, month.Add(-3 * day)},
		{"inside the window", Policy{Window: 3 * day}, month.Add(-2 * day), t0, month, Rotate, month.Add(-2 * day)},
		{"a window longer than the lifetime waits for half of it: no minting loop",
			Policy{Window: 90 * day}, t0.Add(time.Minute), t0, t0.Add(time.Hour), Wait, t0.Add(30 * time.Minute)},
		{"half the lifetime passed with a too long window", Policy{Window: 90 * day}, t0.Add(30 * time.Minute), t0, t0.Add(time.Hour), Rotate, t0.Add(30 * time.Minute)},
		{"a fraction of one half", Policy{LeftFraction: 0.5}, t0, t0, month, Wait, t0.Add(15 * day)},
		{"an invalid fraction is the default", Policy{LeftFraction: 2}, t0, t0, month, Wait, t0.Add(20 * day)},
		{"unknown issue time: a day before expiry", Policy{}, t0, time.Time{}, month, Wait, month.Add(-day)},
		{"unknown issue time, inside the day", Policy{}, month.Add(-time.Hour), time.Time{}, month, Rotate, month.Add(-time.Hour)},
		{"issued after expiry counts as unknown", Policy{}, t0, month.Add(day), month, Wait, month.Add(-day)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, at := c.p.Decide(c.now, c.iss, c.exp)
			if got != c.want || !at.Equal(c.wantAt) {
				t.Fatalf("Decide(%s) = %v at %s, want %v at %s", c.now, got, at, c.want, c.wantAt)
			}
		})
	}
}

// A token rotated when due is never due again before half its own
// lifetime, for any window: minting never loops.
func TestNoRotationLoop(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, w := range []time.Duration{0, time.Minute, time.Hour, 24 * time.Hour, 1000 * time.Hour} {
		for _, life := range []time.Duration{10 * time.Minute, time.Hour, 720 * time.Hour} {
			p := Policy{Window: w}
			if a, _ := p.Decide(t0.Add(life/2-time.Second), t0, t0.Add(life)); a != Wait {
				t.Errorf("window %s, lifetime %s: %v before half the lifetime", w, life, a)
			}
		}
	}
}
