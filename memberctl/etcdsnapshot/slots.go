package etcdsnapshot

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// slotMargin is added to the Job's active deadline to get the latest time
// a snapshot's slot is held without a Release. The Job controller stops
// the Job at activeDeadlineSeconds, so no snapshot runs longer than that
// after its start; a Release lost (the snapshot deleted while the manager
// was down, a cluster gone for good) then frees the slot at most this
// long after the Job could have ended, and backups are never halted by a
// slot nobody holds. The minute covers the Job controller's and the
// apiserver's clocks lagging the manager's.
const slotMargin = time.Minute

// slotsOf is cl's snapshot Slots; a cluster built without any is not paced.
func slotsOf(cl *workload.Cluster) gate.Slots {
	if cl.Slots == nil {
		return gate.AllowAllSlots{}
	}
	return cl.Slots
}

// slot is the slot of snapshot name in cl, held from start until the Job's
// active deadline (plus slotMargin) at the latest.
func slot(cl *workload.Cluster, o Options, req types.NamespacedName, etcdCluster string, start time.Time) gate.Slot {
	return gate.Slot{Cluster: cl.Name, Namespace: req.Namespace, EtcdCluster: etcdCluster, Name: req.Name,
		Expires: start.Add(o.ActiveDeadline + slotMargin)}
}

// releaseSlot frees the slot of a snapshot that ended or went away. It is
// idempotent, so every reconcile of a final or deleted snapshot calls it.
func releaseSlot(cl *workload.Cluster, req types.NamespacedName) {
	slotsOf(cl).Release(gate.Slot{Cluster: cl.Name, Namespace: req.Namespace, Name: req.Name})
}

// holdSlot re-takes the slot of a snapshot that is Started: after a
// manager restart its Job still runs and must count against the limit.
func (st *run) holdSlot() {
	s := st.s
	if s.Status.Phase != v1alpha1.SnapshotStarted {
		return
	}
	start := time.Now()
	if s.Status.StartedAt != nil {
		start = s.Status.StartedAt.Time
	}
	slotsOf(st.cl).Hold(slot(st.cl, st.o, types.NamespacedName{Namespace: s.Namespace, Name: s.Name}, s.Spec.ClusterRef.Name, start))
}

// acquireSlot asks for a slot before the snapshot's Job is created. When
// none is free the snapshot stays Pending (WaitingForSlot) and is looked at
// again after the gate's delay; the worker never blocks. ok reports
// whether the Job may be created; cancel gives the slot back if it is not.
func (st *run) acquireSlot(ctx context.Context) (res ctrl.Result, cancel func(), ok bool) {
	s := st.s
	d := slotsOf(st.cl).Acquire(ctx, slot(st.cl, st.o, types.NamespacedName{Namespace: s.Namespace, Name: s.Name}, s.Spec.ClusterRef.Name, time.Now()))
	if d.Delay > 0 {
		why := d.Reason
		if why == "" {
			why = "the fleet limits how many snapshots run at once and how fast they start"
		}
		st.setReady(metav1.ConditionFalse, v1alpha1.ReasonWaitingForSlot, "waiting for a snapshot slot: "+why)
		return ctrl.Result{RequeueAfter: d.Delay}, nil, false
	}
	return ctrl.Result{}, d.Cancel, true
}
