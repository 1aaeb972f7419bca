package limiter

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

func newTestSlots(max int, perMinute float64) (*Slots, *fakeClock) {
	return newWokenSlots(max, perMinute, nil)
}

func newWokenSlots(max int, perMinute float64, onGrant func(gate.Request)) (*Slots, *fakeClock) {
	clk := newFakeClock()
	return NewSlots(SlotOptions{MaxConcurrent: max, StartsPerMinute: perMinute, Now: clk.Now, OnGrant: onGrant}), clk
}

func snap(cluster string, i int, expires time.Time) gate.Slot {
	return gate.Slot{Cluster: cluster, Namespace: "ns", EtcdCluster: "etcd", Name: fmt.Sprintf("s%d", i), Expires: expires}
}

// TestSlotsBoundConcurrencyAndSpacing: ten clusters ask for a snapshot at
// the same moment, each re-asking after its Delay or when woken, and
// running a minute once started. At no time do more than max run, starts are at least the
// spacing apart, and every snapshot runs.
func TestSlotsBoundConcurrencyAndSpacing(t *testing.T) {
	const limit, perMinute, clusters = 3, 6, 10
	const runFor = time.Minute // six spacings: only the limit keeps it to 3
	type state struct {
		askAt, endAt  time.Time
		started, done bool
	}
	st := make([]state, clusters)
	var clk *fakeClock
	// A granted snapshot is woken and asks again at once, as the
	// controller's wake source makes it.
	s, clk := newWokenSlots(limit, perMinute, func(r gate.Request) {
		var i int
		_, _ = fmt.Sscanf(r.Cluster, "c%d", &i)
		st[i].askAt = clk.Now()
	})
	t0 := clk.Now()
	for i := range st {
		st[i].askAt = t0
	}
	var starts []time.Time
	running, peak := 0, 0
	for clk.Now().Sub(t0) < 10*time.Minute && len(starts) < clusters || running > 0 {
		now := clk.Now()
		for i := range st {
			sl := snap(fmt.Sprintf("c%d", i), 0, now.Add(time.Hour))
			switch {
			case st[i].started && !st[i].done && !now.Before(st[i].endAt):
				s.Release(sl)
				st[i].done = true
				running--
			case !st[i].started && !now.Before(st[i].askAt):
				d := s.Acquire(context.Background(), sl)
				if d.Delay > 0 {
					st[i].askAt = now.Add(d.Delay)
					continue
				}
				st[i].started, st[i].endAt = true, now.Add(runFor)
				starts = append(starts, now)
				running++
				peak = max(peak, running)
			}
		}
		if running > limit {
			t.Fatalf("%d snapshots run at %v, want <= %d", running, now.Sub(t0), limit)
		}
		clk.Advance(100 * time.Millisecond)
	}
	if len(starts) != clusters {
		t.Fatalf("%d of %d snapshots started within 10 minutes", len(starts), clusters)
	}
	if peak != limit {
		t.Errorf("peak concurrency %d; the limit %d was never used in full", peak, limit)
	}
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < 10*time.Second {
			t.Errorf("start %d came %v after the previous one, want >= 10s", i, gap)
		}
	}
}

// TestSlotsHeldCountBeyondLimit: snapshots found running after a restart
// hold their slots even beyond the limit, and nothing starts until enough
// of them end.
func TestSlotsHeldCountBeyondLimit(t *testing.T) {
	s, clk := newTestSlots(2, 60)
	exp := clk.Now().Add(time.Hour)
	for i := range 3 {
		s.Hold(snap("a", i, exp))
	}
	clk.Advance(time.Minute)
	if d := s.Acquire(context.Background(), snap("b", 0, exp)); d.Delay == 0 {
		t.Fatal("a snapshot started while 3 held slots exceed the limit of 2")
	}
	s.Release(snap("a", 0, exp))
	if d := s.Acquire(context.Background(), snap("b", 0, exp)); d.Delay == 0 {
		t.Fatal("a snapshot started while 2 held slots fill the limit of 2")
	}
	s.Release(snap("a", 1, exp))
	if d := s.Acquire(context.Background(), snap("b", 0, exp)); d.Delay != 0 {
		t.Fatalf("told to wait %v with a slot free", d.Delay)
	}
	if got := s.Stats().Running; got != 2 {
		t.Errorf("running %d, want 2", got)
	}
}

// TestSlotsLostReleaseExpires: a slot whose Release never comes frees
// itself at its expiry, so backups never halt.
func TestSlotsLostReleaseExpires(t *testing.T) {
	s, clk := newTestSlots(1, 60)
	clk.Advance(time.Minute)
	if d := s.Acquire(context.Background(), snap("a", 0, clk.Now().Add(10*time.Minute))); d.Delay != 0 {
		t.Fatalf("first snapshot told to wait %v", d.Delay)
	}
	clk.Advance(9 * time.Minute)
	if d := s.Acquire(context.Background(), snap("b", 0, clk.Now().Add(time.Hour))); d.Delay == 0 {
		t.Fatal("second snapshot started while the first one's slot is held")
	}
	clk.Advance(time.Minute + sweepInterval)
	if d := s.Acquire(context.Background(), snap("b", 0, clk.Now().Add(time.Hour))); d.Delay != 0 {
		t.Fatalf("second snapshot told to wait %v after the first slot expired", d.Delay)
	}
	// Hold of a snapshot past its Job's deadline takes nothing.
	s.Hold(snap("c", 0, clk.Now()))
	if got := s.Stats().Running; got != 1 {
		t.Errorf("running %d, want 1", got)
	}
}

// TestSlotsFairAcrossClusters: a cluster with many snapshots queued first
// does not make a later cluster's single snapshot wait behind them all.
func TestSlotsFairAcrossClusters(t *testing.T) {
	s, clk := newTestSlots(1, 60)
	exp := clk.Now().Add(time.Hour)
	for i := range 5 {
		s.Acquire(context.Background(), snap("busy", i, exp))
	}
	s.Acquire(context.Background(), snap("quiet", 0, exp))
	var order []string
	for len(order) < 2 {
		clk.Advance(time.Second)
		for _, sl := range []gate.Slot{snap("busy", 0, exp), snap("busy", 1, exp), snap("quiet", 0, exp)} {
			if d := s.Acquire(context.Background(), sl); d.Delay == 0 {
				order = append(order, sl.Cluster+"/"+sl.Name)
				s.Release(sl)
			}
		}
	}
	if order[0] != "busy/s0" || order[1] != "quiet/s0" {
		t.Errorf("start order %v, want busy/s0 then quiet/s0", order)
	}
}

// TestSlotsShare: a replica owning a part of the fleet gets that part of
// the concurrency (at least one slot), and one owning nothing starts
// nothing.
func TestSlotsShare(t *testing.T) {
	s, clk := newTestSlots(4, 600)
	clk.Advance(time.Minute)
	s.SetShare(1, 4)
	if got := s.Stats().MaxConcurrent; got != 1 {
		t.Errorf("share 1/4 of 4: %d slots, want 1", got)
	}
	s.SetShare(1, 100)
	if got := s.Stats().MaxConcurrent; got != 1 {
		t.Errorf("share 1/100 of 4: %d slots, want the floor of 1", got)
	}
	s.SetShare(0, 4)
	if d := s.Acquire(context.Background(), snap("a", 0, clk.Now().Add(time.Hour))); d.Delay == 0 {
		t.Error("a replica owning nothing started a snapshot")
	}
}

// TestSlotsWakeOnRelease: the snapshot whose turn comes when another ends
// is named to OnGrant, and its next ask starts it.
func TestSlotsWakeOnRelease(t *testing.T) {
	var woken []gate.Request
	s, clk := newWokenSlots(1, 60, func(r gate.Request) { woken = append(woken, r) })
	clk.Advance(time.Minute)
	exp := clk.Now().Add(time.Hour)
	if d := s.Acquire(context.Background(), snap("a", 0, exp)); d.Delay != 0 {
		t.Fatalf("first snapshot told to wait %v", d.Delay)
	}
	if d := s.Acquire(context.Background(), snap("b", 0, exp)); d.Delay == 0 {
		t.Fatal("second snapshot started beside the first with a limit of 1")
	}
	clk.Advance(time.Minute)
	s.Release(gate.Slot{Cluster: "a", Namespace: "ns", Name: "s0"}) // as after deletion: no EtcdCluster
	want := gate.Request{Cluster: "b", Namespace: "ns", EtcdCluster: "etcd", Member: "s0", Action: gate.SnapshotStart}
	if len(woken) != 1 || woken[0] != want {
		t.Fatalf("woken %+v, want %+v", woken, want)
	}
	if d := s.Acquire(context.Background(), snap("b", 0, exp)); d.Delay != 0 {
		t.Fatalf("woken snapshot told to wait %v", d.Delay)
	}
	if len(woken) != 1 {
		t.Errorf("woken again: %+v", woken)
	}
}
