package limiter

import (
	"time"

	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

// grantMemory is how long a grant counts toward its etcd cluster's quorum
// in restoredLocked. Its asker writes PodReplacing before it deletes the
// Pod, so within a reconcile or two every sibling's own view counts the
// member as coming back; 30 s covers a cache seconds behind on a loaded
// apiserver. A grant whose action did not happen is forgotten at once
// (Cancel), and one whose member never came back only stops counting
// after this: until then its siblings wait behind other clusters'
// quorum-restoring requests, never behind nothing.
const grantMemory = 30 * time.Second

// etcdKey names one etcd cluster of the fleet.
type etcdKey struct{ cluster, namespace, etcdCluster string }

func etcdKeyOf(r gate.Request) etcdKey { return etcdKey{r.Cluster, r.Namespace, r.EtcdCluster} }

// recentGrants remembers, per etcd cluster, when each member was last
// granted, for grantMemory.
type recentGrants map[etcdKey]map[string]time.Time

// record notes r's grant at now, dropping the etcd cluster's grants older
// than grantMemory, so that memory stays bounded by what is healing.
func (g recentGrants) record(r gate.Request, now time.Time) {
	k := etcdKeyOf(r)
	m := g[k]
	if m == nil {
		m = map[string]time.Time{}
		g[k] = m
	}
	for member, at := range m {
		if now.Sub(at) > grantMemory {
			delete(m, member)
		}
	}
	m[r.Member] = now
}

// cancel forgets r's grant: its action did not happen.
func (g recentGrants) cancel(r gate.Request) {
	k := etcdKeyOf(r)
	delete(g[k], r.Member)
	if len(g[k]) == 0 {
		delete(g, k)
	}
}

// forget drops a disengaged workload cluster's grants.
func (g recentGrants) forget(cluster string) {
	for k := range g {
		if k.cluster == cluster {
			delete(g, k)
		}
	}
}

// restores reports whether r still gives its etcd cluster back its
// quorum: the voters its asker counted as up or coming back, with the
// members granted since (within grantMemory) and r itself left out, are
// no majority. Counting by member name, a grant its asker already saw is
// counted once. A request that did not say what it saw (r.Quorum nil)
// keeps its QuorumLost as asked.
func (g recentGrants) restores(r gate.Request, now time.Time) bool {
	if r.Quorum == nil {
		return r.QuorumLost
	}
	n := len(r.Quorum.Counted)
	seen := make(map[string]bool, n)
	for _, m := range r.Quorum.Counted {
		seen[m] = true
	}
	for m, at := range g[etcdKeyOf(r)] {
		if !seen[m] && m != r.Member && now.Sub(at) <= grantMemory {
			n++
		}
	}
	return n < r.Quorum.Majority
}

// nextLocked pops the next request to grant. An urgent one at the front
// whose etcd cluster the grants made since its ask already give a
// majority back restores nothing now: it moves to the normal class and
// the next is looked at, so a third member of a cluster whose second was
// just granted waits behind another cluster's second at once, not only
// after its asker has seen the grant and asked again. The queue is not
// empty.
func (l *Limiter) nextLocked(now time.Time) *entry {
	for {
		e := l.queue.peek()
		if e.class != urgent || l.grants.restores(e.req, now) {
			return l.queue.pop()
		}
		l.queue.remove(e)
		e.class = normal
		l.queue.push(e)
	}
}
