package limiter

import (
	"time"

	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

// Defaults for SlotOptions, the only place they live.
const (
	// DefaultMaxConcurrentSnapshots lets four snapshot Jobs run at once
	// fleet-wide: each streams a whole etcd database to object storage, so
	// a few at a time keep the storage's and the network's load flat while
	// a fleet of a thousand daily backups still finishes within hours.
	DefaultMaxConcurrentSnapshots = 4
	// DefaultSnapshotStartsPerMinute spaces snapshot starts 10 s apart:
	// clusters whose schedules all fire at midnight start one by one rather
	// than in the same second, even while slots are free.
	DefaultSnapshotStartsPerMinute = 6
	// DefaultSlotMaxDelay caps a waiting snapshot's Delay. OnGrant wakes it
	// when its slot comes, so the cap only bounds how stale its estimate
	// gets; a thousand waiting snapshots re-ask 70 times a second at most.
	DefaultSlotMaxDelay = 15 * time.Second
	// DefaultSlotQueueTTL drops a waiting snapshot not asked for again in
	// four times DefaultSlotMaxDelay: its reconcile has gone away.
	DefaultSlotQueueTTL = time.Minute
)

// SlotOptions configure Slots. Zero fields take the defaults above, or the
// Limiter's for the queue timings.
type SlotOptions struct {
	// MaxConcurrent is how many snapshots may run at once, fleet-wide.
	MaxConcurrent int
	// StartsPerMinute is how many snapshots may start per minute,
	// fleet-wide; starts are spaced evenly (a bucket of one).
	StartsPerMinute float64
	// Now returns the current time; tests inject a fake clock.
	Now func() time.Time
	// OnGrant is called, without locks held, for each snapshot granted a
	// slot while it was queued, so the controller reconciles it at once
	// (gate.Request: Cluster, Namespace, EtcdCluster, Member = the
	// snapshot's name, Action SnapshotStart). It must not block.
	OnGrant func(gate.Request)
	// GrantTTL, MinDelay and MaxDelay (default DefaultSlotMaxDelay) and
	// QueueTTL (default DefaultSlotQueueTTL) mean what they mean in Options.
	GrantTTL time.Duration
	QueueTTL time.Duration
	MinDelay time.Duration
	MaxDelay time.Duration
}

// withDefaults returns o with every zero or invalid field set to its
// default. A non-positive limit would halt backups, which Slots never does.
func (o SlotOptions) withDefaults() SlotOptions {
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = DefaultMaxConcurrentSnapshots
	}
	if o.StartsPerMinute <= 0 {
		o.StartsPerMinute = DefaultSnapshotStartsPerMinute
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = DefaultSlotMaxDelay
	}
	if o.QueueTTL <= 0 {
		o.QueueTTL = DefaultSlotQueueTTL
	}
	q := Options{Now: o.Now, GrantTTL: o.GrantTTL, QueueTTL: o.QueueTTL, MinDelay: o.MinDelay, MaxDelay: o.MaxDelay}.withDefaults()
	o.Now, o.GrantTTL, o.QueueTTL, o.MinDelay, o.MaxDelay = q.Now, q.GrantTTL, q.QueueTTL, q.MinDelay, q.MaxDelay
	return o
}
