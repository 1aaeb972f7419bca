package limiter

import (
	"fmt"
	"time"
)

// SlotWaitReason says why a snapshot waits for its slot. It labels the
// waiting gauge, so an operator tells a fleet that asks for more than its
// limits apart from a cluster whose own snapshots do not end.
type SlotWaitReason string

const (
	// WaitFleetLimit: its turn has not come, under the fleet-wide
	// concurrency (MaxConcurrent) and start spacing (StartsPerMinute).
	WaitFleetLimit SlotWaitReason = "FleetLimit"
	// WaitClusterCap: its workload cluster runs MaxPerCluster snapshots.
	WaitClusterCap SlotWaitReason = "ClusterCap"
	// WaitNamespaceCap: its namespace runs MaxPerNamespace snapshots.
	WaitNamespaceCap SlotWaitReason = "NamespaceCap"
)

// slotWaitReasons lists every SlotWaitReason, in the order the gauge
// exports them.
var slotWaitReasons = []SlotWaitReason{WaitFleetLimit, WaitClusterCap, WaitNamespaceCap}

// nsRef names a namespace within a workload cluster.
type nsRef struct{ cluster, namespace string }

// slotUse counts the slots taken per workload cluster and per namespace in
// it, for the caps: held ones and granted ones not yet claimed, since a
// grant is a promise of the slot (counting only held ones would let a
// cluster's second snapshot be granted before its first one claims).
type slotUse struct {
	cluster   map[string]int
	namespace map[nsRef]int
}

func newSlotUse() slotUse {
	return slotUse{cluster: map[string]int{}, namespace: map[nsRef]int{}}
}

// add counts n more slots (n < 0: fewer) for k's cluster and namespace,
// dropping zero counts so the maps do not grow with every cluster ever
// seen.
func (u *slotUse) add(k key, n int) {
	u.cluster[k.cluster] += n
	if u.cluster[k.cluster] <= 0 {
		delete(u.cluster, k.cluster)
	}
	ns := nsRef{k.cluster, k.namespace}
	u.namespace[ns] += n
	if u.namespace[ns] <= 0 {
		delete(u.namespace, ns)
	}
}

// holdLocked records k's slot as held until exp, counting it if new.
func (s *Slots) holdLocked(k key, exp time.Time) {
	if _, ok := s.held[k]; !ok {
		s.use.add(k, 1)
	}
	s.held[k] = exp
}

// unholdLocked frees k's held slot, if any.
func (s *Slots) unholdLocked(k key) {
	if _, ok := s.held[k]; ok {
		delete(s.held, k)
		s.use.add(k, -1)
	}
}

// clusterFreeLocked reports whether cluster may take another slot.
func (s *Slots) clusterFreeLocked(cluster string) bool {
	return s.use.cluster[cluster] < s.opts.MaxPerCluster
}

// capLocked returns the cap that keeps queued e from a slot now, or "" if
// none does (it waits for the fleet-wide limits only, or not at all).
func (s *Slots) capLocked(e *entry) SlotWaitReason {
	switch {
	case !s.clusterFreeLocked(e.req.Cluster):
		return WaitClusterCap
	case s.use.namespace[nsRef{e.req.Cluster, e.req.Namespace}] >= s.opts.MaxPerNamespace:
		return WaitNamespaceCap
	}
	return ""
}

// eligibleLocked reports whether queued e may take a free slot.
func (s *Slots) eligibleLocked(e *entry) bool { return s.capLocked(e) == "" }

// waitingLocked counts the queued snapshots by why each waits.
func (s *Slots) waitingLocked() map[SlotWaitReason]int {
	n := map[SlotWaitReason]int{}
	for _, e := range s.entries {
		if e.granted {
			continue
		}
		r := s.capLocked(e)
		if r == "" {
			r = WaitFleetLimit
		}
		n[r]++
	}
	return n
}

// reasonLocked is the sentence queued e's Decision carries: which cap or
// limit keeps it waiting. It names only settings and the cluster and
// namespace, never counts that change while it waits, so the snapshot's
// condition is not rewritten at every re-ask.
func (s *Slots) reasonLocked(e *entry) string {
	switch s.capLocked(e) {
	case WaitClusterCap:
		return fmt.Sprintf("cluster %s already holds its %s (snapshots.maxPerCluster)", e.req.Cluster, slotsWord(s.opts.MaxPerCluster))
	case WaitNamespaceCap:
		return fmt.Sprintf("namespace %s of cluster %s already holds its %s (snapshots.maxPerNamespace)",
			e.req.Namespace, e.req.Cluster, slotsWord(s.opts.MaxPerNamespace))
	}
	return fmt.Sprintf("waiting for its turn: the fleet runs at most %d snapshots at once (snapshots.maxConcurrent) and starts %g per minute (snapshots.startsPerMinute)",
		s.opts.MaxConcurrent, s.opts.StartsPerMinute)
}

// slotsWord is "1 snapshot slot" or "n snapshot slots".
func slotsWord(n int) string {
	if n == 1 {
		return "1 snapshot slot"
	}
	return fmt.Sprintf("%d snapshot slots", n)
}
