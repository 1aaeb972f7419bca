package limiter

import (
	"time"

	"golang.org/x/time/rate"

	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

// Defaults for Options. They are the only place defaults live: New fills
// every zero field from here.
const (
	// DefaultRate lets two destructive actions start per second fleet-wide:
	// a power-cycled fleet of a few hundred etcd Pods drains in minutes while
	// the API servers and the storage behind the PVCs never see a stampede.
	DefaultRate rate.Limit = 2
	// DefaultBurst lets a small incident (a handful of Pods) be repaired at
	// once instead of being paced.
	DefaultBurst = 10
	// DefaultGrantTTL is how long a grant waits to be claimed. A reconcile
	// that was told to go ahead re-asks within milliseconds; one that has not
	// after 30s has gone away and must not keep the token.
	DefaultGrantTTL = 30 * time.Second
	// DefaultQueueTTL is how long a queued request survives without being
	// asked again. Waiting callers re-ask at least every MaxDelay, so 30s of
	// silence means the member no longer needs the action.
	DefaultQueueTTL = 30 * time.Second
	// DefaultMinDelay keeps a throttled caller from spinning on the gate.
	DefaultMinDelay = 20 * time.Millisecond
	// DefaultMaxDelay caps the estimated wait so a throttled caller re-asks
	// soon even without OnGrant: estimates go stale as clusters come and go.
	DefaultMaxDelay = 5 * time.Second
)

// sweepInterval is how often expired grants and abandoned queue entries are
// looked for. Expiry is a safety net, so second granularity is plenty and
// keeps Reserve from scanning every entry on every call.
const sweepInterval = time.Second

// Options configure a Limiter. Zero fields take the Default* values.
type Options struct {
	// Rate is the number of tokens added per second, fleet-wide.
	Rate rate.Limit
	// Burst is the bucket size: how many actions may start at once.
	Burst int
	// Now returns the current time; tests inject a fake clock.
	Now func() time.Time
	// OnGrant is called once for each request granted while it was queued
	// (not for a request granted inside its own Reserve call), so the
	// controller can requeue that member at once instead of waiting out its
	// Delay. It is called without locks held and must not block: send to a
	// buffered channel or a workqueue.
	OnGrant func(gate.Request)
	// OnReask is called, without locks held, for each queued request of an
	// etcd cluster whose sibling has just asked as QuorumLost while the
	// request itself still waits as an ordinary heal: its asker decided
	// before it saw the quorum go, and would otherwise keep that place
	// until its Delay (up to MaxDelay) runs out, while tokens go to other
	// clusters' members that restore nothing. Asked again at once, it
	// reports what it sees now and moves up if it restores the quorum.
	// Like OnGrant it must not block. Nil: requests re-ask on their Delay.
	OnReask func(gate.Request)
	// OnGranted is called for every grant, queued or not, at the moment
	// the limiter decides it (before the request claims it): the manager
	// logs it, so that every destructive action's wait and the order of
	// grants can be read back. It is called with the limiter's lock held
	// and must not call into the limiter or block.
	OnGranted func(Granted)
	// GrantTTL is how long a grant waits to be claimed before its token is
	// returned.
	GrantTTL time.Duration
	// QueueTTL is how long a queued request survives without being asked
	// again before it is dropped.
	QueueTTL time.Duration
	// MinDelay and MaxDelay bound the Delay handed to a throttled caller.
	MinDelay time.Duration
	MaxDelay time.Duration
	// StartEmpty grants nothing before Start runs and empties the bucket
	// when it does. A manager runs Start when it becomes leader, so a
	// restarted manager, or a standby that takes over, does not spend a
	// second Burst right after its predecessor spent one: across the
	// handover the fleet still sees at most Burst + Rate·T actions in any
	// window of T. The price is that a new leader's first action waits
	// 1/Rate.
	StartEmpty bool
	// ShareRaiseDelay is how long a larger share (SetShare) waits before it
	// takes effect; a smaller one applies at once.
	ShareRaiseDelay time.Duration
}

// withDefaults returns o with every zero or invalid field set to its default.
// A non-positive Rate would halt the fleet, which the limiter never does, so
// it is treated as unset.
func (o Options) withDefaults() Options {
	if o.Rate <= 0 {
		o.Rate = DefaultRate
	}
	if o.Burst <= 0 {
		o.Burst = DefaultBurst
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.GrantTTL <= 0 {
		o.GrantTTL = DefaultGrantTTL
	}
	if o.QueueTTL <= 0 {
		o.QueueTTL = DefaultQueueTTL
	}
	if o.MinDelay <= 0 {
		o.MinDelay = DefaultMinDelay
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = DefaultMaxDelay
	}
	if o.ShareRaiseDelay <= 0 {
		o.ShareRaiseDelay = DefaultShareRaiseDelay
	}
	if o.MaxDelay < o.MinDelay {
		o.MaxDelay = o.MinDelay
	}
	return o
}
