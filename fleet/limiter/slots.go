package limiter

import (
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

var _ gate.Slots = (*Slots)(nil)

// Slots is the snapshot class of the limiter: a fleet-wide gate.Slots that
// bounds how many snapshots run at once, in the fleet, per workload
// cluster and per namespace, and spaces their starts, handing free slots
// out round-robin across workload clusters. It shares nothing with a
// Limiter, so snapshots never take a replacement's token.
type Slots struct {
	opts    SlotOptions
	metrics *slotMetrics

	mu sync.Mutex
	// max is the concurrency in force: MaxConcurrent, or this replica's
	// share of it (SetShare); 0 while owning no cluster.
	max int
	// spacing paces starts: a bucket of one token, so starts are evenly
	// spaced and never come in a burst.
	spacing   *rate.Limiter
	clock     monoClock
	lastSweep time.Time
	queue     fairQueue
	entries   map[key]*entry // queued and granted-unclaimed
	unclaimed int
	// held are the running snapshots' slots, with when each frees itself.
	held map[key]time.Time
	// use counts held and unclaimed slots per cluster and namespace, for
	// MaxPerCluster and MaxPerNamespace.
	use slotUse
}

// NewSlots returns Slots with opts, zero fields defaulted. The spacing
// bucket starts empty: a restarted manager first sees its snapshots that
// already run (Hold) for one spacing interval before it starts any.
func NewSlots(opts SlotOptions) *Slots {
	opts = opts.withDefaults()
	s := &Slots{
		opts:    opts,
		metrics: newSlotMetrics(),
		max:     opts.MaxConcurrent,
		spacing: rate.NewLimiter(rate.Limit(opts.StartsPerMinute/60), 1),
		queue:   newFairQueue(),
		entries: map[key]*entry{},
		held:    map[key]time.Time{},
		use:     newSlotUse(),
	}
	now := s.nowLocked()
	s.spacing.ReserveN(now, 1)
	return s
}

// slotKey identifies a snapshot by cluster, namespace and name: Release
// may come after the EtcdSnapshot is gone, without its EtcdCluster.
func slotKey(sl gate.Slot) key {
	return key{cluster: sl.Cluster, namespace: sl.Namespace, member: sl.Name, action: gate.SnapshotStart}
}

func slotKeyOf(r gate.Request) key {
	return slotKey(gate.Slot{Cluster: r.Cluster, Namespace: r.Namespace, Name: r.Member})
}

func slotRequest(sl gate.Slot) gate.Request {
	return gate.Request{Cluster: sl.Cluster, Namespace: sl.Namespace, EtcdCluster: sl.EtcdCluster, Member: sl.Name, Action: gate.SnapshotStart}
}

// Acquire implements gate.Slots. The first ask queues sl; free slots go to
// queued snapshots in fairness order, one per spacing interval, and a
// granted one is kept for its snapshot until it asks again (or GrantTTL).
func (s *Slots) Acquire(_ context.Context, sl gate.Slot) gate.Decision {
	k := slotKey(sl)
	s.mu.Lock()
	d, woken := s.acquireLocked(k, sl)
	s.mu.Unlock()
	s.notify(woken)
	return d
}

func (s *Slots) acquireLocked(k key, sl gate.Slot) (gate.Decision, []gate.Request) {
	now := s.nowLocked()
	s.sweepLocked(now)
	if _, ok := s.held[k]; ok {
		s.holdLocked(k, sl.Expires)
		return gate.Decision{Cancel: s.releaser(k)}, nil
	}
	e, known := s.entries[k]
	if !known {
		e = &entry{req: slotRequest(sl), class: normal, firstAsk: now}
		s.entries[k] = e
		s.queue.push(e)
	}
	e.lastAsk = now
	woken := s.grantLocked(now, k)
	if !e.granted {
		return gate.Decision{Delay: s.delayLocked(e, now), Cancel: func() {}, Reason: s.reasonLocked(e)}, woken
	}
	delete(s.entries, k)
	s.unclaimed--
	s.held[k] = sl.Expires // counted in s.use since its grant
	s.metrics.start(now.Sub(e.firstAsk))
	return gate.Decision{Cancel: s.releaser(k)}, woken
}

// Hold implements gate.Slots: a running snapshot's slot counts even beyond
// the limits and caps, and is no longer queued.
func (s *Slots) Hold(sl gate.Slot) {
	k := slotKey(sl)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.nowLocked()
	if e, ok := s.entries[k]; ok {
		s.dropLocked(k, e)
	}
	if !sl.Expires.After(now) {
		return // past its Job's deadline: it cannot be running any more
	}
	s.holdLocked(k, sl.Expires)
}

// Release implements gate.Slots.
func (s *Slots) Release(sl gate.Slot) { s.releaser(slotKey(sl))() }

// releaser frees k's slot, or forgets its queued request; idempotent.
func (s *Slots) releaser(k key) func() {
	return func() {
		s.mu.Lock()
		now := s.nowLocked()
		s.unholdLocked(k)
		if e, ok := s.entries[k]; ok {
			s.dropLocked(k, e)
		}
		woken := s.grantLocked(now, key{})
		s.mu.Unlock()
		s.notify(woken)
	}
}

// ForgetCluster drops a disengaged cluster's queued requests and unclaimed
// grants. Its held slots stay until released or expired: its Jobs keep
// running in the workload cluster whether or not it is engaged.
func (s *Slots) ForgetCluster(cluster string) {
	s.mu.Lock()
	for k, e := range s.entries {
		if k.cluster == cluster {
			s.dropLocked(k, e)
		}
	}
	s.queue.forget(cluster)
	woken := s.grantLocked(s.nowLocked(), key{})
	s.mu.Unlock()
	s.notify(woken)
}

// SetShare makes this replica's limits its share of the fleet's for owning
// owned of total registered clusters: ⌈s·MaxConcurrent⌉ would overshoot, so
// the concurrency is ⌊s·MaxConcurrent⌋ but at least 1, and the start rate
// s·StartsPerMinute. A replica owning nothing starts nothing.
func (s *Slots) SetShare(owned, total int) {
	s.mu.Lock()
	now := s.nowLocked()
	s.max = 0
	var woken []gate.Request
	if owned > 0 && total > 0 {
		f := min(1, float64(owned)/float64(total))
		s.max = max(1, int(math.Floor(f*float64(s.opts.MaxConcurrent))))
		s.spacing.SetLimitAt(now, rate.Limit(f*s.opts.StartsPerMinute/60))
		woken = s.grantLocked(now, key{})
	}
	s.mu.Unlock()
	s.notify(woken)
}

// grantLocked grants free slots to queued snapshots in fairness order, as
// far as the concurrency limit and the spacing allow, passing over those
// whose cluster or namespace is at its cap: they keep their turn, and
// the next cluster's snapshot takes the slot. It returns those to wake:
// every one granted but self, whose caller is told directly.
func (s *Slots) grantLocked(now time.Time, self key) []gate.Request {
	var woken []gate.Request
	for s.queue.len() > 0 && len(s.held)+s.unclaimed < s.max && s.spacing.TokensAt(now) >= 1 {
		e := s.queue.popEligible(s.clusterFreeLocked, s.eligibleLocked)
		if e == nil {
			break // every waiting snapshot's cluster or namespace is at its cap
		}
		s.spacing.ReserveN(now, 1)
		e.granted, e.grantedAt = true, now
		s.unclaimed++
		s.use.add(slotKeyOf(e.req), 1)
		if slotKeyOf(e.req) != self {
			woken = append(woken, e.req)
		}
	}
	return woken
}

// notify calls OnGrant for each request, never with s.mu held.
func (s *Slots) notify(reqs []gate.Request) {
	if s.opts.OnGrant == nil {
		return
	}
	for _, r := range reqs {
		s.opts.OnGrant(r)
	}
}

// delayLocked estimates when queued e is granted: once the spacing has
// let the snapshots ahead of it start, if slots are free for them all;
// otherwise, or while its cluster or namespace is at its cap, nobody
// knows when a running snapshot ends, and e re-asks after MaxDelay.
func (s *Slots) delayLocked(e *entry, now time.Time) time.Duration {
	n := s.queue.ahead(e) + 1
	if len(s.held)+s.unclaimed+n > s.max || !s.eligibleLocked(e) {
		return s.opts.MaxDelay
	}
	need := float64(n) - s.spacing.TokensAt(now)
	wait := time.Duration(math.Ceil(need / float64(s.spacing.Limit()) * float64(time.Second)))
	return min(max(wait, s.opts.MinDelay), s.opts.MaxDelay)
}

// sweepLocked frees expired slots and unclaimed grants, and drops queued
// requests nobody asks for any more; at most once per sweepInterval.
func (s *Slots) sweepLocked(now time.Time) {
	if now.Sub(s.lastSweep) < sweepInterval {
		return
	}
	s.lastSweep = now
	for k, exp := range s.held {
		if !now.Before(exp) {
			s.unholdLocked(k)
		}
	}
	for k, e := range s.entries {
		if (e.granted && now.Sub(e.grantedAt) > s.opts.GrantTTL) || (!e.granted && now.Sub(e.lastAsk) > s.opts.QueueTTL) {
			s.dropLocked(k, e)
		}
	}
}

// dropLocked forgets e; an unclaimed grant's slot is free again.
func (s *Slots) dropLocked(k key, e *entry) {
	delete(s.entries, k)
	if e.granted {
		s.unclaimed--
		s.use.add(k, -1)
		return
	}
	s.queue.remove(e)
}

// nowLocked returns the current time, never earlier than one already used.
func (s *Slots) nowLocked() time.Time { return s.clock.read(s.opts.Now) }

// SlotStats is a point-in-time view of Slots.
type SlotStats struct {
	// MaxConcurrent is the concurrency in force (this replica's share);
	// MaxPerCluster and MaxPerNamespace the caps.
	MaxConcurrent, MaxPerCluster, MaxPerNamespace int
	// Running counts held slots (running snapshots); Waiting the queued
	// snapshots, Unclaimed the granted ones not yet started.
	Running, Waiting, Unclaimed int
	// WaitingFor splits Waiting by why each snapshot waits.
	WaitingFor map[SlotWaitReason]int
}

// Stats returns the current SlotStats.
func (s *Slots) Stats() SlotStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked(s.nowLocked())
	return SlotStats{MaxConcurrent: s.max, MaxPerCluster: s.opts.MaxPerCluster, MaxPerNamespace: s.opts.MaxPerNamespace,
		Running: len(s.held), Waiting: s.queue.len(), Unclaimed: s.unclaimed, WaitingFor: s.waitingLocked()}
}
