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
	// DefaultMaxSnapshotsPerCluster lets one snapshot per workload cluster
	// hold a slot at a time. A slot is held until the Job ends, up to its
	// 30-minute deadline, so without a cap one cluster whose object store
	// is slow or a tarpit could take every fleet-wide slot, round after
	// round, while all the other clusters fall behind their schedules;
	// with it, such a cluster holds one slot and the rest of the fleet
	// keeps the others. A cluster's own snapshots then run one after
	// another, which its schedules allow: each takes minutes, not hours.
	DefaultMaxSnapshotsPerCluster = 1
	// DefaultMaxSnapshotsPerNamespace does the same within a workload
	// cluster, for when MaxPerCluster is raised: a namespace names its own
	// endpoint and credentials, so one tenant's tarpit cannot take its
	// whole cluster's share either. At the defaults the cluster cap is
	// the tighter one.
	DefaultMaxSnapshotsPerNamespace = 1
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
	// MaxPerCluster is how many snapshots one workload cluster may run at
	// once, and MaxPerNamespace how many one namespace in it may. A
	// snapshot over either cap waits, without holding up other clusters'
	// or namespaces' snapshots behind it.
	MaxPerCluster   int
	MaxPerNamespace int
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
	if o.MaxPerCluster <= 0 {
		o.MaxPerCluster = DefaultMaxSnapshotsPerCluster
	}
	if o.MaxPerNamespace <= 0 {
		o.MaxPerNamespace = DefaultMaxSnapshotsPerNamespace
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
