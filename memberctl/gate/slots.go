package gate

import (
	"context"
	"time"
)

// SnapshotStart is the Action under which a Slot is queued; it names the
// work in metrics and logs.
const SnapshotStart Action = "SnapshotStart"

// Slot identifies one long-running task that takes a slot while it runs:
// a snapshot Job, from its start to its end.
type Slot struct {
	// Cluster is the workload cluster's name in the fleet; empty for a
	// single-cluster operator.
	Cluster string
	// Namespace, EtcdCluster and Name name the task (the EtcdSnapshot) and
	// the etcd cluster it works on.
	Namespace   string
	EtcdCluster string
	Name        string
	// Expires is when the slot frees itself if Release never comes: the
	// latest time the task can still be running.
	Expires time.Time
}

// Slots bound how many long-running tasks run at once and how fast they
// start. Unlike Gate, whose grant is spent at once, a slot is held from the
// task's start until Release.
type Slots interface {
	// Acquire asks for a slot for a task about to start. Delay 0 means the
	// slot is held for s from now on; Cancel gives it back when the task
	// did not start after all. Otherwise the caller must requeue after
	// Delay and ask again, never block. Asking again for a held slot
	// grants it again.
	Acquire(ctx context.Context, s Slot) Decision
	// Hold records a slot for a task that is already running (found after a
	// restart); it always counts, even beyond the limit, since the task
	// runs whatever the limit says.
	Hold(s Slot)
	// Release frees s's slot, if held, when its task ended or went away.
	Release(s Slot)
}

// AllowAllSlots is the default Slots: every task starts at once.
type AllowAllSlots struct{}

// Acquire implements Slots.
func (AllowAllSlots) Acquire(context.Context, Slot) Decision { return Decision{Cancel: func() {}} }

// Hold implements Slots.
func (AllowAllSlots) Hold(Slot) {}

// Release implements Slots.
func (AllowAllSlots) Release(Slot) {}
