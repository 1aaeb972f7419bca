package limiter

import (
	"fmt"
	"testing"
	"time"

	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

// roll is a planned request: one member of an upgrade wave.
func roll(cluster string, member int) gate.Request {
	r := req(cluster, member)
	r.Action = gate.VersionRoll
	return r
}

// TestHealsBeforePlannedRolls: an upgrade wave queues a roll for every
// member of many clusters; a fleet reboot in its middle queues heals
// (terminal Pods, some clusters without quorum) behind them. Every heal is
// granted before any roll still waiting, so the wave takes no token a heal
// needs, and the wave completes after: a roll is deferred, never dropped.
func TestHealsBeforePlannedRolls(t *testing.T) {
	const r, b = 2, 2
	s := newSim(t, Options{Rate: r, Burst: b})
	for c := range 4 {
		for m := range 3 {
			s.add(roll(fmt.Sprintf("wave%d", c), m), 0)
		}
	}
	reboot := time.Second
	heals := 0
	for c := range 3 {
		for m := range 3 {
			h := req(fmt.Sprintf("rebooted%d", c), m)
			h.QuorumLost = c == 0
			s.add(h, reboot)
			heals++
		}
	}
	s.run(time.Minute)
	if !s.allDone() {
		t.Fatal("not every request was granted: a planned roll must be deferred, not dropped")
	}
	lastHeal, firstRollAfter := time.Duration(-1), time.Duration(-1)
	healsSeen := 0
	for _, g := range s.grants {
		if g.at <= reboot {
			continue // the wave's rolls before the reboot
		}
		if !g.req.Action.Planned() {
			healsSeen++
			lastHeal = g.at
			continue
		}
		if healsSeen < heals && firstRollAfter < 0 {
			firstRollAfter = g.at
		}
	}
	if healsSeen != heals {
		t.Fatalf("%d heals granted after the reboot, want %d", healsSeen, heals)
	}
	if firstRollAfter >= 0 {
		t.Fatalf("a roll was granted at %v, before the last heal (%v)", firstRollAfter, lastHeal)
	}
	// The heals wait only for tokens, as they would without a wave: the
	// 9 heals take 9 tokens at 2/s, less what accrued before they came.
	if bound := reboot + time.Duration(float64(heals)/r*float64(time.Second)) + 100*time.Millisecond; lastHeal > bound {
		t.Fatalf("last heal granted at %v, bound %v", lastHeal, bound)
	}
}

// TestPlannedAhead: a waiting roll counts every queued heal ahead of it
// (its Delay estimate), and a heal none of the rolls.
func TestPlannedAhead(t *testing.T) {
	q := newFairQueue()
	p := &entry{req: roll("a", 0), class: classOf(roll("a", 0))}
	q.push(p)
	h := &entry{req: req("b", 0), class: classOf(req("b", 0))}
	q.push(h)
	u := req("c", 0)
	u.QuorumLost = true
	ue := &entry{req: u, class: classOf(u)}
	q.push(ue)
	if p.class != planned || h.class != normal || ue.class != urgent {
		t.Fatalf("classes %v %v %v", p.class, h.class, ue.class)
	}
	if got := q.ahead(p); got != 2 {
		t.Fatalf("roll has %d ahead, want the heal and the urgent heal", got)
	}
	if got := q.ahead(h); got != 1 {
		t.Fatalf("heal has %d ahead, want the urgent one only", got)
	}
	var order []string
	for e := q.pop(); e != nil; e = q.pop() {
		order = append(order, e.req.Cluster)
	}
	if fmt.Sprint(order) != "[c b a]" {
		t.Fatalf("pop order %v, want [c b a]", order)
	}
	if q.len() != 0 || len(q.clusters) != 0 {
		t.Fatalf("empty queue keeps state: %+v", q)
	}
}
