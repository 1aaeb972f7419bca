package bench

import (
	"slices"
	"time"
)

// What a user feels during a fleet heal is how long each etcd cluster
// cannot take writes, not when its last Pod is Ready: a cluster takes
// writes again once a majority of its members runs. These functions time
// that from the replacements a PodRecorder reconstructed, and give the
// lowest time any order of the limiter's grants could reach.

// Majority is the quorum of an etcd cluster of n voting members.
func Majority(n int) int { return n/2 + 1 }

// Quorum is one etcd cluster's time without quorum during a heal.
type Quorum struct {
	// Lost: the Pod whose terminal state left fewer than a majority
	// running was first seen terminal. Zero if quorum was never lost.
	Lost time.Time
	// Regained: enough replacements were Ready for a majority again.
	Regained time.Time
	// Needed is how many replacements had to be Ready for that: the
	// members a quorum-first order must serve before any other of this
	// cluster's. Their sum over the fleet, paced as the limiter paces
	// (timeline.LimiterBound), is the quorum bound.
	Needed int
}

// Down is Lost → Regained, zero if quorum was never lost.
func (q Quorum) Down() time.Duration {
	if q.Lost.IsZero() {
		return 0
	}
	return q.Regained.Sub(q.Lost)
}

// QuorumOf times the quorum of a cluster of n members of which the members
// in rs were replaced (every other member ran throughout). A cluster runs
// a majority at t if n − (members terminal and not yet replaced and Ready
// at t) ≥ Majority(n); a member is down from Terminal until its
// replacement's Ready.
func QuorumOf(n int, rs []Replacement) Quorum {
	spare := n - Majority(n) // members a cluster can lose and keep quorum
	if len(rs) <= spare {
		return Quorum{}
	}
	terminal := make([]time.Time, 0, len(rs))
	ready := make([]time.Time, 0, len(rs))
	for _, r := range rs {
		terminal, ready = append(terminal, r.Terminal), append(ready, r.Ready)
	}
	slices.SortFunc(terminal, time.Time.Compare)
	slices.SortFunc(ready, time.Time.Compare)
	// Quorum goes with the (spare+1)-th member down. Members come back in
	// Ready order; it returns when no more than spare are still down. This
	// assumes each member went down before any replacement was Ready, which
	// holds in a reboot (every Pod terminal within the node outage, every
	// replacement waiting for the limiter); for a member that came back
	// before others went down it errs towards a longer time down.
	needed := len(rs) - spare
	return Quorum{Lost: terminal[spare], Regained: ready[needed-1], Needed: needed}
}
