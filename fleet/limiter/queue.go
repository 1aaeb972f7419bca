package limiter

import (
	"slices"
	"sort"
	"time"

	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

// class orders waiting requests: every urgent request is served before any
// normal one, because a cluster without quorum serves no writes at all while
// a degraded one still does; and every heal before any planned action (a
// version roll), so a fleet reboot in the middle of an upgrade wave heals
// first and the wave resumes after.
type class int

const (
	urgent  class = iota // QuorumLost
	normal               // other heals
	planned              // gate.Action.Planned: maintenance, not a heal
	numClasses
)

func classOf(r gate.Request) class {
	switch {
	case r.QuorumLost:
		return urgent
	case r.Action.Planned():
		return planned
	}
	return normal
}

// key identifies one destructive action. QuorumLost is left out on purpose:
// it describes the etcd cluster's state, which may change between asks of
// the same request.
type key struct {
	cluster, namespace, etcdCluster, member string
	action                                  gate.Action
}

func keyOf(r gate.Request) key {
	return key{r.Cluster, r.Namespace, r.EtcdCluster, r.Member, r.Action}
}

// entry is a request the limiter knows about: queued, or granted and not yet
// claimed.
type entry struct {
	req       gate.Request
	class     class
	seq       uint64 // arrival order; keeps a cluster's FIFO stable across reclassing
	firstAsk  time.Time
	lastAsk   time.Time
	granted   bool
	grantedAt time.Time
	throttled bool // counted in ThrottledTotal already
}

// clusterQueue holds one workload cluster's waiting requests, per class, in
// arrival order. inRing[c] is true exactly when fifo[c] is non-empty.
type clusterQueue struct {
	name   string
	fifo   [numClasses][]*entry
	inRing [numClasses]bool
}

// fairQueue serves waiting requests round-robin across clusters, urgent class
// first. Each class has a ring of clusters with waiting requests, ordered by
// when each was last served: the front is served next and goes to the back.
// A cluster that starts waiting joins by the same order, so one that took
// the burst a moment ago queues behind clusters not yet served, and one
// that flaps (empties its queue and comes back) never gets ahead of those
// served less recently.
type fairQueue struct {
	clusters map[string]*clusterQueue
	rings    [numClasses][]*clusterQueue
	size     [numClasses]int
	seq      uint64
	// served is the pop count at each cluster's last pop. It outlives the
	// clusterQueue, which is dropped when idle, and is bounded by the fleet
	// since forget drops disengaged clusters.
	served map[string]uint64
	pops   uint64
}

func newFairQueue() fairQueue {
	return fairQueue{clusters: map[string]*clusterQueue{}, served: map[string]uint64{}}
}

// forget drops what the queue remembers of an idle cluster.
func (q *fairQueue) forget(cluster string) { delete(q.served, cluster) }

// join puts cq in class c's ring by when it was last served; among equals,
// the newcomer goes last.
func (q *fairQueue) join(c class, cq *clusterQueue) {
	cq.inRing[c] = true
	r, at := q.rings[c], q.served[cq.name]
	i := sort.Search(len(r), func(i int) bool { return q.served[r[i].name] > at })
	q.rings[c] = slices.Insert(r, i, cq)
}

func (q *fairQueue) len() int {
	n := 0
	for _, s := range q.size {
		n += s
	}
	return n
}

// lenCluster returns how many requests of cluster are waiting.
func (q *fairQueue) lenCluster(cluster string) int {
	cq := q.clusters[cluster]
	if cq == nil {
		return 0
	}
	n := 0
	for _, f := range cq.fifo {
		n += len(f)
	}
	return n
}

// push queues e in its cluster's FIFO for e.class, keeping arrival order.
func (q *fairQueue) push(e *entry) {
	if e.seq == 0 {
		q.seq++
		e.seq = q.seq
	}
	cq := q.clusters[e.req.Cluster]
	if cq == nil {
		cq = &clusterQueue{name: e.req.Cluster}
		q.clusters[cq.name] = cq
	}
	c := e.class
	f := cq.fifo[c]
	i := sort.Search(len(f), func(i int) bool { return f[i].seq > e.seq })
	cq.fifo[c] = slices.Insert(f, i, e)
	q.size[c]++
	if !cq.inRing[c] {
		q.join(c, cq)
	}
}

// pop removes and returns the next request in fairness order, or nil.
func (q *fairQueue) pop() *entry {
	for c := urgent; c < numClasses; c++ {
		if q.size[c] > 0 {
			return q.take(c, 0, 0)
		}
	}
	return nil
}

// peek returns the request pop would return, without taking it, or nil.
func (q *fairQueue) peek() *entry {
	for c := urgent; c < numClasses; c++ {
		if q.size[c] > 0 {
			return q.rings[c][0].fifo[c][0]
		}
	}
	return nil
}

// popEligible is pop for requests that may be refused for now: it returns
// the first request in fairness order whose cluster clusterOK accepts and
// which ok accepts, or nil. A cluster passed over keeps its place in the
// ring: it was not served, so it is first in line once it may be again.
// It costs a look at each waiting request in the worst case, which Slots
// pays only when a slot is free to grant.
func (q *fairQueue) popEligible(clusterOK func(string) bool, ok func(*entry) bool) *entry {
	for c := urgent; c < numClasses; c++ {
		for j, cq := range q.rings[c] {
			if !clusterOK(cq.name) {
				continue
			}
			if i := slices.IndexFunc(cq.fifo[c], ok); i >= 0 {
				return q.take(c, j, i)
			}
		}
	}
	return nil
}

// take removes the i-th request of the j-th cluster in class c's ring and
// counts that cluster served: it goes to the back of the ring, the most
// recently served, or leaves it with nothing more waiting. Taking the
// front (pop) stays O(1).
func (q *fairQueue) take(c class, j, i int) *entry {
	cq := q.rings[c][j]
	if j == 0 {
		q.rings[c] = q.rings[c][1:]
	} else {
		q.rings[c] = slices.Delete(q.rings[c], j, j+1)
	}
	e := cq.fifo[c][i]
	if i == 0 {
		cq.fifo[c][0] = nil // let the entry be collected once claimed
		cq.fifo[c] = cq.fifo[c][1:]
	} else {
		cq.fifo[c] = slices.Delete(cq.fifo[c], i, i+1)
	}
	q.size[c]--
	q.pops++
	q.served[cq.name] = q.pops
	if len(cq.fifo[c]) > 0 {
		q.rings[c] = append(q.rings[c], cq)
	} else {
		cq.inRing[c] = false
		q.forgetIfEmpty(cq)
	}
	return e
}

// remove takes e out of the queue wherever it is; false if it was not queued.
func (q *fairQueue) remove(e *entry) bool {
	cq := q.clusters[e.req.Cluster]
	if cq == nil {
		return false
	}
	c := e.class
	i, ok := q.index(cq, e)
	if !ok {
		return false
	}
	cq.fifo[c] = slices.Delete(cq.fifo[c], i, i+1)
	q.size[c]--
	if len(cq.fifo[c]) == 0 {
		cq.inRing[c] = false
		q.rings[c] = slices.DeleteFunc(q.rings[c], func(x *clusterQueue) bool { return x == cq })
		q.forgetIfEmpty(cq)
	}
	return true
}

// forgetIfEmpty drops an idle cluster so the map does not grow with every
// cluster ever seen.
func (q *fairQueue) forgetIfEmpty(cq *clusterQueue) {
	for _, f := range cq.fifo {
		if len(f) > 0 {
			return
		}
	}
	delete(q.clusters, cq.name)
}

func (q *fairQueue) index(cq *clusterQueue, e *entry) (int, bool) {
	f := cq.fifo[e.class]
	i := sort.Search(len(f), func(i int) bool { return f[i].seq >= e.seq })
	return i, i < len(f) && f[i] == e
}

// ahead returns how many queued requests pop would return before e, if no
// more arrive. e is the i-th of its cluster, so it is served in round i+1:
// every cluster before e's in the ring gives up to i+1 requests first, every
// one after it up to i. Every request of a higher class (urgent, then
// normal) precedes it.
func (q *fairQueue) ahead(e *entry) int {
	cq := q.clusters[e.req.Cluster]
	if cq == nil {
		return 0
	}
	c := e.class
	i, ok := q.index(cq, e)
	if !ok {
		return 0
	}
	n := i
	for higher := urgent; higher < c; higher++ {
		n += q.size[higher]
	}
	before := true
	for _, x := range q.rings[c] {
		if x == cq {
			before = false
			continue
		}
		turns := i
		if before {
			turns++
		}
		n += min(len(x.fifo[c]), turns)
	}
	return n
}
