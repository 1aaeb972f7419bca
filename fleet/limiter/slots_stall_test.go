package limiter

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

// slotSnap is one EtcdSnapshot as the snapshot controller drives it: it
// asks for a slot when due (after its Delay, or at once when OnGrant names
// it), then its Job runs for the sim's runFor and releases the slot,
// unless its cluster's endpoint is stalled and the Job never ends.
type slotSnap struct {
	sl             gate.Slot
	round          int
	nextAsk        time.Duration
	started, done  bool
	startAt, endAt time.Duration
	expires        time.Duration // when its held slot frees itself
	stalled        bool
}

// slotSim runs Slots on a fake clock in one-second ticks.
type slotSim struct {
	clock   *fakeClock
	start   time.Time
	s       *Slots
	snaps   []*slotSnap
	byKey   map[key]*slotSnap
	runFor  time.Duration
	slotTTL time.Duration // the Job's deadline plus margin: Expires - start
}

func newSlotSim(opts SlotOptions, runFor, slotTTL time.Duration) *slotSim {
	sim := &slotSim{clock: newFakeClock(), byKey: map[key]*slotSnap{}, runFor: runFor, slotTTL: slotTTL}
	sim.start = sim.clock.Now()
	opts.Now = sim.clock.Now
	opts.OnGrant = func(r gate.Request) {
		if sn := sim.byKey[slotKeyOf(r)]; sn != nil {
			sn.nextAsk = sim.now() // the controller requeues it at once
		}
	}
	sim.s = NewSlots(opts)
	return sim
}

func (sim *slotSim) now() time.Duration { return sim.clock.Now().Sub(sim.start) }

// add creates a snapshot that first asks now.
func (sim *slotSim) add(cluster, namespace string, round int, stalled bool) {
	sl := gate.Slot{Cluster: cluster, Namespace: namespace, EtcdCluster: "etcd", Name: fmt.Sprintf("etcd-r%d", round)}
	sn := &slotSnap{sl: sl, round: round, nextAsk: sim.now(), stalled: stalled}
	sim.snaps = append(sim.snaps, sn)
	sim.byKey[slotKey(sl)] = sn
}

// tick lets every due snapshot act once, then advances the clock.
func (sim *slotSim) tick() {
	now := sim.now()
	for _, sn := range sim.snaps {
		switch {
		case sn.done:
		case sn.started && !sn.stalled && now >= sn.endAt:
			sim.s.Release(sn.sl)
			sn.done = true
		case !sn.started && now >= sn.nextAsk:
			sn.sl.Expires = sim.clock.Now().Add(sim.slotTTL) // as the controller sets it at every ask
			d := sim.s.Acquire(context.Background(), sn.sl)
			if d.Delay > 0 {
				sn.nextAsk = now + d.Delay
				continue
			}
			sn.started, sn.startAt, sn.endAt, sn.expires = true, now, now+sim.runFor, now+sim.slotTTL
		}
	}
	sim.clock.Advance(time.Second)
}

// running counts cluster's started snapshots whose slot has not expired:
// the Jobs it runs, each holding a slot.
func (sim *slotSim) running(cluster string) int {
	n := 0
	for _, sn := range sim.snaps {
		if sn.sl.Cluster == cluster && sn.started && !sn.done && sim.now() < sn.expires {
			n++
		}
	}
	return n
}

// TestSlotsStalledClusterKeepsOthersOnSchedule: ten workload clusters,
// each with an EtcdCluster in three namespaces, all on the same hourly
// schedule, at the default limits. One cluster's object store is a
// tarpit: its snapshots never end, their slots freed only at the Job's
// deadline or never. That cluster never holds more than one slot, and
// every snapshot of the nine others ends within the round it was
// scheduled in, round after round. Without the cluster cap, round-robin
// hands the stalled cluster a slot each turn until it holds them all.
func TestSlotsStalledClusterKeepsOthersOnSchedule(t *testing.T) {
	const clusters, rounds = 10, 4
	const period, runFor = time.Hour, 2 * time.Minute
	namespaces := []string{"a", "b", "c"}
	for _, tc := range []struct {
		name    string
		slotTTL time.Duration
		// minStalled is how many of the stalled cluster's snapshots must
		// start: with slots freed at the deadline, one per deadline, so it
		// is held back by its cap and never halted.
		minStalled int
	}{
		{"slot freed at the Job's deadline", 31 * time.Minute, rounds},
		{"slot never freed", 1000 * time.Hour, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim := newSlotSim(SlotOptions{}, runFor, tc.slotTTL)
			for r := range rounds {
				for c := range clusters {
					for _, ns := range namespaces {
						sim.add(fmt.Sprintf("c%d", c), ns, r, c == 0)
					}
				}
				for sim.now() < time.Duration(r+1)*period {
					sim.tick()
					if n := sim.running("c0"); n > 1 {
						t.Fatalf("at %v the stalled cluster holds %d slots, want at most 1", sim.now(), n)
					}
				}
			}
			stalledStarts := 0
			for _, sn := range sim.snaps {
				if sn.stalled {
					if sn.started {
						stalledStarts++
					}
					continue
				}
				due := time.Duration(sn.round+1) * period
				if !sn.done || sn.endAt > due {
					t.Errorf("%s/%s/%s: done %v at %v, want done by the next round at %v",
						sn.sl.Cluster, sn.sl.Namespace, sn.sl.Name, sn.done, sn.endAt, due)
				}
			}
			if stalledStarts < tc.minStalled {
				t.Fatalf("the stalled cluster started %d snapshots, want at least %d", stalledStarts, tc.minStalled)
			}
		})
	}
}
