package limiter

import (
	"math"
	"time"

	"golang.org/x/time/rate"
)

// DefaultShareRaiseDelay is how long a larger share waits before it takes
// effect (Options.ShareRaiseDelay). A cluster moves between replicas through
// its fence Lease: the old owner's share shrinks within milliseconds of its
// engagement ending, while the new owner must see the fence free, acquire
// it, connect and engage before its share grows at all. The delay adds a
// full 1 s window, and then some, between the two, and covers replicas that
// see a Secret's removal a moment apart.
const DefaultShareRaiseDelay = 2 * time.Second

// share is the part of the fleet-wide Rate and Burst a replica uses.
type share struct {
	limit rate.Limit
	burst int
	none  bool // owns no cluster: no token at all
}

// shareOf is the share of a replica owning owned of total clusters, from
// the fleet-wide rate r and burst b. With s = owned/total, the replica's
// part of any 1 s window is s·(b + r): its burst is ⌊s·b⌋ and its rate
// s·r, so that the replicas' parts, whose s add up to at most 1, never
// exceed b + r together (nor b + r·T in any window of T ≥ 1 s). A replica
// with s·b < 1 still gets a burst of 1, or it could never act; its rate is
// then lowered by what that rounding added, s·(b + r) − 1, so that its
// part stays s·(b + r). Only when that leaves nothing (s < 1/(b + r)) does
// it run at the floor: burst 1 and rate s·r, so it never halts; such a
// replica can exceed its part of a window by less than one token.
func shareOf(r rate.Limit, b, owned, total int) share {
	if owned <= 0 || total <= 0 {
		return share{limit: r, burst: 1, none: true}
	}
	s := min(1, float64(owned)/float64(total))
	burst := max(1, int(math.Floor(s*float64(b))))
	fair := s * float64(r)
	lim := min(fair, s*(float64(b)+float64(r))-float64(burst))
	if lim <= 0 {
		lim = fair // the floor
	}
	return share{limit: rate.Limit(lim), burst: burst}
}

// SetShare makes this replica's bucket its share of the fleet-wide Rate
// and Burst for owning owned of total registered clusters (see shareOf).
// A smaller share applies at once; a larger one (more rate, more burst, or
// any after none) after Options.ShareRaiseDelay, and never adds tokens:
// the bucket refills at the new rate. A replica owning nothing grants
// nothing and holds no token. Without calls the limiter uses the whole
// Rate and Burst, as a single replica does.
func (l *Limiter) SetShare(owned, total int) {
	if l.opts.Rate == rate.Inf {
		return // nothing to split
	}
	want := shareOf(l.opts.Rate, l.opts.Burst, owned, total)
	l.mu.Lock()
	now := l.nowLocked()
	cur := l.currentShareLocked()
	lower := share{limit: min(cur.limit, want.limit), burst: min(cur.burst, want.burst), none: cur.none || want.none}
	l.applyShareLocked(lower, now)
	switch {
	case lower == want:
		l.pendingShare, l.pendingAt = nil, time.Time{}
	case l.pendingShare == nil || *l.pendingShare != want:
		// The same raise asked again keeps its time: the wiring calls
		// SetShare on every change it sees, which must not postpone it.
		l.pendingShare, l.pendingAt = &want, now.Add(l.opts.ShareRaiseDelay)
	}
	l.mu.Unlock()
	l.nudge()
}

// currentShareLocked is the share in force.
func (l *Limiter) currentShareLocked() share {
	return share{limit: l.bucket.Limit(), burst: l.bucket.Burst(), none: l.noShare}
}

// applyShareLocked puts sh in force. Leaving none starts from an empty
// bucket, as StartEmpty does: tokens kept while owning nothing are not
// anybody's share.
func (l *Limiter) applyShareLocked(sh share, now time.Time) {
	if sh.none && !l.noShare {
		l.drainLocked(now)
	}
	if !sh.none && l.noShare {
		l.drainLocked(now)
	}
	l.noShare = sh.none
	l.bucket.SetLimitAt(now, sh.limit)
	l.bucket.SetBurstAt(now, sh.burst)
	l.clampLocked(now)
}

// raiseDueLocked applies a pending larger share once its delay is over.
func (l *Limiter) raiseDueLocked(now time.Time) {
	if l.pendingShare != nil && !now.Before(l.pendingAt) {
		sh := *l.pendingShare
		l.pendingShare = nil
		l.applyShareLocked(sh, now)
	}
}

// drainLocked empties the bucket and the refunds.
func (l *Limiter) drainLocked(now time.Time) {
	if n := math.Floor(l.bucket.TokensAt(now)); n > 0 {
		l.bucket.ReserveN(now, int(n))
	}
	l.refund = 0
}

// SetPart puts p in force at once, in both directions: the caller
// (FleetShare) has already waited what a larger part needs. A larger part
// never adds tokens, the bucket refills at the new rate; a smaller one
// clamps the bucket; no part (a zero Burst or Rate) grants nothing and
// starts the next part from an empty bucket.
func (l *Limiter) SetPart(p Part) {
	if l.opts.Rate == rate.Inf {
		return
	}
	sh := share{limit: rate.Limit(p.Rate), burst: p.Burst}
	if p.none() {
		// A positive limit keeps the bucket's arithmetic finite; nothing is
		// taken from it while none.
		sh = share{limit: l.opts.Rate, burst: 1, none: true}
	}
	l.mu.Lock()
	l.pendingShare, l.pendingAt = nil, time.Time{}
	if sh != l.currentShareLocked() {
		l.applyShareLocked(sh, l.nowLocked())
	}
	l.mu.Unlock()
	l.nudge()
}

// Demand returns the requests waiting here whose etcd cluster lost
// quorum and the others, for FleetShare (Owned is the caller's).
func (l *Limiter) Demand() Demand {
	l.mu.Lock()
	defer l.mu.Unlock()
	lost := l.queue.size[urgent]
	return Demand{Lost: lost, Other: l.queue.len() - lost}
}
