package limiter

import (
	"slices"
	"testing"
	"time"

	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

// lostReq is member m of workload cluster c's etcd cluster, asking while
// the cluster has no quorum and its asker counted the voters counted as up
// or coming back (of 3 voters, majority 2).
func lostReq(c string, m int, counted ...string) gate.Request {
	r := req(c, m)
	r.QuorumLost = true
	r.Quorum = &gate.QuorumView{Majority: 2, Counted: counted}
	return r
}

// TestGrantsRestoreQuorumAtOnce: cluster a's three members all ask as
// quorum-lost; once two of them are granted, a's third restores nothing
// and goes behind cluster b's quorum-restoring second member at once,
// although its asker, not having seen the grants, asks again with the same
// stale view (its Delay is long: MaxDelay keeps it from re-asking soon).
func TestGrantsRestoreQuorumAtOnce(t *testing.T) {
	s := newSim(t, Options{Rate: 1, Burst: 1, MaxDelay: time.Minute})
	for m := range 3 {
		s.add(lostReq("a", m), 0)
	}
	for m := range 3 {
		s.add(lostReq("b", m), 1500*time.Millisecond)
	}
	s.run(10 * time.Second)
	var order []string
	for _, g := range s.grants {
		order = append(order, g.req.Cluster+g.req.Member[len(g.req.Member)-1:])
	}
	// a0 takes the burst, a1 the next token; b0 and b1 restore b's quorum
	// before a2 (a's third, which restores nothing) and b2.
	if len(order) < 4 || !slices.Equal(order[:4], []string{"a0", "a1", "b0", "b1"}) {
		t.Fatalf("grant order %v: b's two quorum-restoring members must come before a's third", order)
	}
}

// TestRestoresCountsByName: a grant its asker already saw (named in
// Counted) is counted once; a cancelled grant and one older than
// grantMemory do not count; a request that said nothing keeps QuorumLost.
func TestRestoresCountsByName(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := recentGrants{}
	g.record(req("a", 1), now)
	if !g.restores(lostReq("a", 2, "m001"), now) {
		t.Fatal("m001 counted twice: seen by the asker and granted")
	}
	if g.restores(lostReq("a", 2, "m000"), now) {
		t.Fatal("m000 (seen) and m001 (granted) are a majority of 3: m002 restores nothing")
	}
	if !g.restores(lostReq("b", 2, "m000"), now) {
		t.Fatal("a grant in another workload cluster counted")
	}
	if !g.restores(lostReq("a", 2, "m000"), now.Add(grantMemory+time.Second)) {
		t.Fatal("a grant older than grantMemory still counts")
	}
	g.cancel(req("a", 1))
	if !g.restores(lostReq("a", 2, "m000"), now) {
		t.Fatal("a cancelled grant still counts")
	}
	plain := req("a", 2)
	plain.QuorumLost = true
	g.record(req("a", 0), now)
	g.record(req("a", 1), now)
	if !g.restores(plain, now) {
		t.Fatal("a request without a view lost its QuorumLost")
	}
}

// TestSiblingAskingQuorumLostMakesWaitersAskAgain: a0 asked as an ordinary
// heal before its asker saw a's quorum go; a1 then asks as quorum-lost.
// OnReask names a0 (and no member of another etcd cluster); asked again
// with what it sees now, a0 restores a's quorum and goes before the
// ordinary heals of clusters c and d, which asked first and which the
// round-robin puts ahead of it. Without OnReask, a0 keeps that place
// (its Delay is long) and two tokens go to members that restore nothing.
func TestSiblingAskingQuorumLostMakesWaitersAskAgain(t *testing.T) {
	order := func(reask bool) []string {
		var s *sim
		opts := Options{Rate: 1, Burst: 1, MaxDelay: time.Minute}
		var reasked []string
		if reask {
			opts.OnReask = func(r gate.Request) {
				reasked = append(reasked, r.Cluster+r.Member[len(r.Member)-1:])
				sr := s.byKey[keyOf(r)]
				sr.req = lostReq(r.Cluster, 0) // it now sees the quorum gone
				sr.nextAsk = s.now()
			}
		}
		s = newSim(t, opts)
		for _, c := range []string{"b", "c", "d"} {
			s.add(req(c, 0), 0)
		}
		s.add(req("a", 0), 100*time.Millisecond)
		s.add(lostReq("a", 1), 200*time.Millisecond)
		s.run(10 * time.Second)
		if reask && !slices.Equal(reasked, []string{"a0"}) {
			t.Errorf("OnReask named %v, want [a0]", reasked)
		}
		var out []string
		for _, g := range s.grants {
			out = append(out, g.req.Cluster+g.req.Member[len(g.req.Member)-1:])
		}
		return out
	}
	// b0 takes the burst; a's two members restore its quorum next.
	got := order(true)
	if len(got) < 3 || got[0] != "b0" || !slices.Contains(got[1:3], "a0") || !slices.Contains(got[1:3], "a1") {
		t.Errorf("with OnReask, grant order %v: a0 and a1 restore a's quorum and must come right after b0", got)
	}
	if got := order(false); len(got) < 3 || slices.Contains(got[1:3], "a0") {
		t.Errorf("without OnReask, grant order %v: the test no longer shows the stale place", got)
	}
}
