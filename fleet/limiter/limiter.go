package limiter

import (
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

var _ gate.Gate = (*Limiter)(nil)

// Limiter is a fleet-wide gate.Gate: a token bucket that paces destructive
// actions and hands scarce tokens out round-robin across workload clusters.
// It never refuses for good: every request that keeps asking is granted.
type Limiter struct {
	opts    Options
	metrics *metrics
	wake    chan struct{} // nudges Start's loop when its timer may be too long

	mu     sync.Mutex
	bucket *rate.Limiter
	// refund holds tokens given back by Cancel, expiry and ForgetCluster.
	// rate.Reservation.CancelAt restores nothing once the reservation's time
	// has passed, and every grant here is made for "now", so returned tokens
	// are kept beside the bucket, clamped so both together never exceed Burst.
	refund    float64
	clock     monoClock
	lastSweep time.Time
	// started is set by Start; with Options.StartEmpty no token exists
	// before it.
	started bool
	// noShare is set while this replica owns no cluster (SetShare): no
	// token exists. pendingShare is a larger share due at pendingAt.
	noShare      bool
	pendingShare *share
	pendingAt    time.Time
	queue        fairQueue
	entries      map[key]*entry // queued and granted-unclaimed requests
	// grants remembers recent grants per etcd cluster, which demote an
	// urgent request once they give its cluster a majority back.
	grants    recentGrants
	unclaimed int

	grantedTotal   uint64
	returnedTotal  uint64
	throttledTotal uint64
	throttledBy    map[string]uint64
}

// New returns a Limiter with opts, zero fields defaulted.
func New(opts Options) *Limiter {
	opts = opts.withDefaults()
	return &Limiter{
		opts:        opts,
		metrics:     newMetrics(),
		wake:        make(chan struct{}, 1),
		bucket:      rate.NewLimiter(opts.Rate, opts.Burst),
		queue:       newFairQueue(),
		entries:     map[key]*entry{},
		grants:      recentGrants{},
		throttledBy: map[string]uint64{},
	}
}

// Reserve implements gate.Gate. The first ask queues r; tokens are then
// granted in fairness order, on this or any later call or by Start's loop.
// A granted r gets Delay 0 and a Cancel that returns the token; otherwise
// Delay estimates when r's turn comes. Reserve never blocks, so ctx is unused.
func (l *Limiter) Reserve(_ context.Context, r gate.Request) gate.Decision {
	k := keyOf(r)
	l.mu.Lock()
	now := l.nowLocked()
	l.sweepLocked(now)
	e, known := l.entries[k]
	if !known {
		e = &entry{req: r, class: classOf(r), firstAsk: now}
		l.entries[k] = e
		l.queue.push(e)
	}
	e.lastAsk = now
	var reask []gate.Request
	if !e.granted && (l.reclassLocked(e, r) || !known) && e.class == urgent {
		reask = l.siblingsToReaskLocked(k, etcdKeyOf(r))
	}
	woken := l.grantLocked(now, k)
	defer l.reask(reask)
	if e.granted {
		delete(l.entries, k)
		l.unclaimed--
		l.mu.Unlock()
		l.notify(woken)
		return gate.Decision{Cancel: l.canceller(r)}
	}
	delay := l.delayLocked(e, now)
	if !e.throttled {
		e.throttled = true
		l.throttledTotal++
		l.throttledBy[r.Cluster]++
	}
	l.mu.Unlock()
	l.notify(woken)
	if !known {
		l.nudge() // Start's loop may be asleep for longer than r needs to wait
	}
	return gate.Decision{Delay: delay, Cancel: func() {}}
}

// reclassLocked moves a queued e when its etcd cluster lost or regained
// quorum since the last ask; the latest state decides its place. It
// reports whether e moved.
func (l *Limiter) reclassLocked(e *entry, r gate.Request) bool {
	e.req = r
	c := classOf(r)
	if c == e.class {
		return false
	}
	l.queue.remove(e)
	e.class = c
	l.queue.push(e)
	return true
}

// siblingsToReaskLocked returns the requests of etcd cluster ec, other
// than k, that wait as ordinary heals (Options.OnReask).
func (l *Limiter) siblingsToReaskLocked(k key, ec etcdKey) []gate.Request {
	if l.opts.OnReask == nil {
		return nil
	}
	var out []gate.Request
	for sk, se := range l.entries {
		if sk != k && !se.granted && se.class == normal && etcdKeyOf(se.req) == ec {
			out = append(out, se.req)
		}
	}
	return out
}

// reask calls OnReask for each request; never with l.mu held.
func (l *Limiter) reask(reqs []gate.Request) {
	for _, r := range reqs {
		l.opts.OnReask(r)
	}
}

// canceller returns r's grant's Cancel: it gives the token back at most
// once, however often it is called, and forgets the grant (it no longer
// counts toward r's etcd cluster's quorum).
func (l *Limiter) canceller(r gate.Request) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			now := l.nowLocked()
			l.refundLocked(now)
			l.grants.cancel(r)
			woken := l.grantLocked(now, key{})
			l.mu.Unlock()
			l.notify(woken)
		})
	}
}

// ForgetCluster drops everything queued or granted for a disengaged cluster;
// its unclaimed grants' tokens go back to the other clusters.
func (l *Limiter) ForgetCluster(cluster string) {
	l.mu.Lock()
	now := l.nowLocked()
	for k, e := range l.entries {
		if k.cluster == cluster {
			l.dropLocked(k, e, now)
		}
	}
	delete(l.throttledBy, cluster)
	l.queue.forget(cluster)
	l.grants.forget(cluster)
	woken := l.grantLocked(now, key{})
	l.mu.Unlock()
	l.metrics.forgetCluster(cluster)
	l.notify(woken)
}

// Start grants tokens as they accrue and fires OnGrant, so waiting members
// are woken without any Reserve call arriving. It implements
// controller-runtime's manager.Runnable and returns nil when ctx is done.
func (l *Limiter) Start(ctx context.Context) error {
	l.begin()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-l.wake:
		}
		timer.Reset(l.step())
	}
}

// begin marks the limiter started; with StartEmpty it also empties the
// bucket, which refilled while this process waited to become leader.
func (l *Limiter) begin() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.started = true
	if l.opts.StartEmpty && l.opts.Rate != rate.Inf {
		now := l.nowLocked()
		l.bucket.ReserveN(now, int(math.Floor(l.bucket.TokensAt(now))))
		l.refund = 0
	}
}

// idleLocked reports whether no token may exist yet: StartEmpty before Start.
// Owning no cluster (SetShare) is idle too.
func (l *Limiter) idleLocked() bool { return (l.opts.StartEmpty && !l.started) || l.noShare }

// step does one round of Start's loop: expire, grant, notify. It returns how
// long the loop may sleep: until the next token if anyone waits, otherwise
// until the next sweep.
func (l *Limiter) step() time.Duration {
	l.mu.Lock()
	now := l.nowLocked()
	l.sweepLocked(now)
	woken := l.grantLocked(now, key{})
	wait := sweepInterval
	if l.queue.len() > 0 {
		// The millisecond absorbs float rounding, so the loop does not wake
		// a hair before the token is whole and spin.
		wait = min(wait, l.untilTokens(1-l.tokensLocked(now))+time.Millisecond)
	}
	l.mu.Unlock()
	l.notify(woken)
	return wait
}

func (l *Limiter) nudge() {
	select {
	case l.wake <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// notify calls OnGrant for each request; never with l.mu held, since the
// callback may call back into the limiter or take its own locks.
func (l *Limiter) notify(reqs []gate.Request) {
	if l.opts.OnGrant == nil {
		return
	}
	for _, r := range reqs {
		l.opts.OnGrant(r)
	}
}

// nowLocked returns the current time, never earlier than a time already
// used: rate.Limiter moves its clock back when given an earlier time and
// then credits the same interval twice.
func (l *Limiter) nowLocked() time.Time {
	now := l.clock.read(l.opts.Now)
	l.raiseDueLocked(now)
	return now
}

// Granted is one grant as Options.OnGranted sees it.
type Granted struct {
	Request gate.Request
	// Waited is the time from the request's first ask to the grant.
	Waited time.Duration
	// Restoring is true when the grant was served as one that gives its
	// etcd cluster its quorum back (before every other heal), which a
	// QuorumLost request is unless grants since its ask already do.
	Restoring bool
}

// grantLocked hands out every available token to queued requests in fairness
// order. It returns the requests to pass to OnGrant: all newly granted ones
// except self, whose caller is told directly.
func (l *Limiter) grantLocked(now time.Time, self key) []gate.Request {
	var woken []gate.Request
	for l.queue.len() > 0 && l.takeLocked(now) {
		e := l.nextLocked(now)
		e.granted, e.grantedAt = true, now
		l.grants.record(e.req, now)
		l.unclaimed++
		l.grantedTotal++
		l.metrics.grant(e.req, now.Sub(e.firstAsk))
		if l.opts.OnGranted != nil {
			l.opts.OnGranted(Granted{Request: e.req, Waited: now.Sub(e.firstAsk), Restoring: e.class == urgent})
		}
		if k := keyOf(e.req); k != self {
			woken = append(woken, e.req)
		}
	}
	return woken
}

// takeLocked takes one token, refunded ones first since those are the ones
// clamped away as the bucket refills. When only a fraction of a token is in
// each, the bucket goes into debt by the rest: a reservation of one token
// cannot be split, and the refund left beside it pays the debt, so the sum
// stays exact.
func (l *Limiter) takeLocked(now time.Time) bool {
	if l.idleLocked() {
		return false
	}
	if l.opts.Rate == rate.Inf {
		return true // no pacing; the bucket's arithmetic would yield NaN
	}
	l.clampLocked(now)
	if l.refund >= 1 {
		l.refund--
		return true
	}
	if l.bucket.TokensAt(now)+l.refund < 1 {
		return false
	}
	l.bucket.ReserveN(now, 1)
	return true
}

func (l *Limiter) refundLocked(now time.Time) {
	l.returnedTotal++
	if l.opts.Rate != rate.Inf {
		l.refund++
		l.clampLocked(now)
	}
}

// clampLocked keeps bucket plus refunds at most the burst in force (Burst,
// or this replica's share of it), as a single bucket would: a token
// returned to a full bucket is lost.
func (l *Limiter) clampLocked(now time.Time) {
	room := float64(l.bucket.Burst()) - l.bucket.TokensAt(now)
	l.refund = max(0, min(l.refund, room))
}

// tokensLocked returns the tokens available now.
func (l *Limiter) tokensLocked(now time.Time) float64 {
	if l.idleLocked() {
		return 0
	}
	if l.opts.Rate == rate.Inf {
		return float64(l.opts.Burst)
	}
	l.clampLocked(now)
	return l.bucket.TokensAt(now) + l.refund
}

// untilTokens converts a number of tokens into the time they take to accrue.
func (l *Limiter) untilTokens(n float64) time.Duration {
	if n <= 0 || l.opts.Rate == rate.Inf {
		return 0
	}
	return time.Duration(math.Ceil(n / float64(l.bucket.Limit()) * float64(time.Second)))
}

// delayLocked estimates when queued e is granted: the requests ahead of it
// plus its own need tokens beyond those available now. The estimate ignores
// later arrivals, so it is capped to make the caller re-ask and learn again.
func (l *Limiter) delayLocked(e *entry, now time.Time) time.Duration {
	need := float64(l.queue.ahead(e)+1) - l.tokensLocked(now)
	return min(max(l.untilTokens(need), l.opts.MinDelay), l.opts.MaxDelay)
}

// sweepLocked returns tokens of grants nobody claimed and drops queued
// requests nobody asks for any more. It runs at most once per sweepInterval.
func (l *Limiter) sweepLocked(now time.Time) {
	if now.Sub(l.lastSweep) < sweepInterval {
		return
	}
	l.lastSweep = now
	for k, e := range l.entries {
		if (e.granted && now.Sub(e.grantedAt) > l.opts.GrantTTL) ||
			(!e.granted && now.Sub(e.lastAsk) > l.opts.QueueTTL) {
			l.dropLocked(k, e, now)
		}
	}
}

// dropLocked forgets e, returning its token if it held one.
func (l *Limiter) dropLocked(k key, e *entry, now time.Time) {
	delete(l.entries, k)
	if e.granted {
		l.unclaimed--
		l.refundLocked(now)
		return
	}
	l.queue.remove(e)
}
