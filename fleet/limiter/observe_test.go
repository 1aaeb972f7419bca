package limiter

import (
	"fmt"
	"testing"
	"time"
)

// TestOnGrantedReportsEveryWait: OnGranted fires once per grant, inline
// or notified, with the time from the request's first ask to its grant,
// which is what the fleet bench reads as limiter wait.
func TestOnGrantedReportsEveryWait(t *testing.T) {
	waited := map[key][]time.Duration{}
	var s *sim
	s = newSim(t, Options{Rate: 4, Burst: 3, OnGranted: func(g Granted) {
		waited[keyOf(g.Request)] = append(waited[keyOf(g.Request)], g.Waited)
	}})
	for c := range 4 {
		for m := range 5 {
			s.add(req(fmt.Sprintf("c%d", c), m), time.Duration(m)*300*time.Millisecond)
		}
	}
	s.run(time.Minute)
	if !s.allDone() || len(s.grants) != 20 {
		t.Fatalf("%d of 20 granted", len(s.grants))
	}
	throttled := 0
	for _, g := range s.grants {
		k := keyOf(g.req)
		if len(waited[k]) != 1 {
			t.Fatalf("OnGranted fired %d times for %v", len(waited[k]), k)
		}
		if want := g.at - s.byKey[k].arrive; waited[k][0] != want {
			t.Errorf("%v: waited %v, granted %v after its first ask", k, waited[k][0], want)
		}
		if waited[k][0] > 0 {
			throttled++
		}
	}
	if throttled == 0 {
		t.Fatal("no request waited: the test does not exercise pacing")
	}
}

// TestOnGrantedSaysWhetherTheGrantRestoresAQuorum: the grant line's
// "restoring" is how the limiter served the request, which the fleet e2e
// orders grants by: a quorum-lost request is served as restoring, an
// ordinary heal is not.
func TestOnGrantedSaysWhetherTheGrantRestoresAQuorum(t *testing.T) {
	restoring := map[string]bool{}
	s := newSim(t, Options{Rate: 1, Burst: 1, OnGranted: func(g Granted) {
		restoring[g.Request.Member] = g.Restoring
	}})
	lost := req("c1", 1)
	lost.QuorumLost = true
	s.add(req("c0", 0), 0)
	s.add(lost, 0)
	s.run(time.Minute)
	if len(restoring) != 2 || !restoring[lost.Member] || restoring[req("c0", 0).Member] {
		t.Fatalf("restoring by member: %v; want only %s", restoring, lost.Member)
	}
}
