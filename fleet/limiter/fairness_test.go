package limiter

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestFairArrivingTogether: clusters of very different sizes asking at the
// same instant are served round-robin. Every cluster gets its first token
// before any gets a second, and the clusters' mean waits differ by at most
// 2x: a FIFO would make the last cluster wait for all the others.
func TestFairArrivingTogether(t *testing.T) {
	const r, b, clusters = 2, 2, 8
	s := newSim(t, Options{Rate: r, Burst: b})
	for c := range clusters {
		for m := range 10 {
			s.add(req(fmt.Sprintf("c%d", c), m), 0)
		}
	}
	s.run(time.Minute)
	if !s.allDone() {
		t.Fatal("not all granted")
	}
	// The first b askers take the burst before anyone has to queue; from
	// then on every cluster gets a token before any gets another.
	seen := map[string]bool{}
	for _, g := range s.grants[b : b+clusters] {
		seen[g.req.Cluster] = true
	}
	if len(seen) != clusters {
		t.Fatalf("grants %d..%d went to %d clusters: %v", b, b+clusters, len(seen), seen)
	}
	// c0 asked first and took the whole burst, so the other clusters need
	// one fresh token each, served before c0 again.
	first := s.firstGrant()
	limit := time.Duration(float64(clusters-1)/r*float64(time.Second)) + 50*time.Millisecond
	for c, at := range first {
		if at > limit {
			t.Errorf("cluster %s first granted at %v, round-robin bound %v", c, at, limit)
		}
	}
	sum, n := map[string]time.Duration{}, map[string]int{}
	for _, g := range s.grants {
		sum[g.req.Cluster] += g.at
		n[g.req.Cluster]++
	}
	var means []time.Duration
	for c := range sum {
		means = append(means, sum[c]/time.Duration(n[c]))
	}
	lo, hi := slices.Min(means), slices.Max(means)
	if float64(hi) > 2*float64(lo) {
		t.Fatalf("mean wait per cluster ranges %v..%v, want max/min <= 2", lo, hi)
	}
}

// TestFlappingClusterDoesNotStarve: one cluster with many members re-asking
// every tick, and asking again as soon as each action is done, holds a long
// queue. Clusters arriving later still get their first token within one
// round-robin turn.
func TestFlappingClusterDoesNotStarve(t *testing.T) {
	const r, b, others = 2, 2, 4
	s := newSim(t, Options{Rate: r, Burst: b})
	for m := range 40 {
		sr := s.add(req("flappy", m), 0)
		sr.constant, sr.recur = true, true
	}
	arrive := 3 * time.Second
	for c := range others {
		for m := range 3 {
			s.add(req(fmt.Sprintf("quiet%d", c), m), arrive)
		}
	}
	s.run(20 * time.Second)
	first := s.firstGrant()
	// The quiet clusters were never served, flappy just was: quiet cluster i
	// gets the (i+1)th token accruing after it arrives.
	for c := range others {
		name := fmt.Sprintf("quiet%d", c)
		limit := arrive + time.Duration(float64(c+1)/r*float64(time.Second)) + 50*time.Millisecond
		at, ok := first[name]
		if !ok || at > limit {
			t.Errorf("%s first granted at %v (granted=%v), want by %v", name, at, ok, limit)
		}
	}
	if slices.ContainsFunc(s.reqs, func(sr *simReq) bool { return !sr.recur && !sr.done }) {
		t.Error("quiet clusters not all granted within 20s")
	}
}

// TestQuorumLostFirst: requests of etcd clusters without quorum overtake
// everything waiting, round-robin among their own workload clusters.
func TestQuorumLostFirst(t *testing.T) {
	const r, b = 2, 2
	s := newSim(t, Options{Rate: r, Burst: b})
	for c := range 5 {
		for m := range 10 {
			s.add(req(fmt.Sprintf("c%d", c), m), 0)
		}
	}
	arrive := 2 * time.Second
	for _, c := range []string{"q1", "q2"} {
		for m := range 3 {
			rq := req(c, m)
			rq.QuorumLost = true
			s.add(rq, arrive)
		}
	}
	s.run(time.Minute)
	var after []string
	for _, g := range s.grants {
		if g.at > arrive {
			after = append(after, g.req.Cluster)
		}
	}
	want := []string{"q1", "q2", "q1", "q2", "q1", "q2"}
	if len(after) < 6 || !slices.Equal(after[:6], want) {
		t.Fatalf("grants after quorum-lost arrival: %v, want %v first", after, want)
	}
}

// TestQuorumLostReclass: a queued request whose etcd cluster loses quorum
// moves ahead at once, and back in arrival order when quorum returns.
func TestQuorumLostReclass(t *testing.T) {
	q := newFairQueue()
	var es []*entry
	for m := range 3 {
		e := &entry{req: req("a", m), class: normal}
		q.push(e)
		es = append(es, e)
	}
	other := &entry{req: req("b", 0), class: normal}
	q.push(other)
	q.remove(es[1])
	es[1].class = urgent
	q.push(es[1])
	if got := q.ahead(es[1]); got != 0 {
		t.Fatalf("urgent entry has %d ahead", got)
	}
	if got := q.ahead(other); got != 2 {
		t.Fatalf("b's first has %d ahead, want urgent a1 and a0", got)
	}
	q.remove(es[1])
	es[1].class = normal
	q.push(es[1])
	var order []string
	for e := q.pop(); e != nil; e = q.pop() {
		order = append(order, e.req.Cluster+e.req.Member)
	}
	if want := []string{"am000", "bm000", "am001", "am002"}; !slices.Equal(order, want) {
		t.Fatalf("pop order %v, want %v", order, want)
	}
	if len(q.clusters) != 0 || q.len() != 0 {
		t.Fatalf("empty queue keeps state: %+v", q)
	}
}

// TestIdleClusterKeepsItsTurn: a cluster that was just served, went idle and
// asks again queues behind a cluster not served yet, even if it asks first;
// otherwise a cluster flapping one member at a time would jump the ring.
func TestIdleClusterKeepsItsTurn(t *testing.T) {
	q := newFairQueue()
	q.push(&entry{req: req("a", 0), class: normal})
	q.pop()
	q.push(&entry{req: req("a", 1), class: normal})
	q.push(&entry{req: req("b", 0), class: normal})
	if e := q.pop(); e.req.Cluster != "b" {
		t.Fatalf("served %s first, want b", e.req.Cluster)
	}
	q.forget("a")
	if len(q.served) != 1 {
		t.Fatalf("forget left %v", q.served)
	}
}
