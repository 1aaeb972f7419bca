package etcddefrag

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// Options tune the reconcilers. Defaults live in DefaultOptions.
type Options struct {
	// Requeue is how often an EtcdDefrag that waits (for its cluster, for
	// the cluster's health, for an older EtcdDefrag) is looked at again,
	// and how soon a schedule whose run is due but blocked tries again.
	Requeue time.Duration
}

// DefaultOptions returns the defaults.
func DefaultOptions() Options {
	return Options{Requeue: 10 * time.Second}
}

// Reconciler reconciles EtcdDefrags in any workload cluster.
type Reconciler struct {
	Clusters workload.Source
	Options  Options
}

// run is the state of one reconcile.
type run struct {
	o    Options
	cl   *workload.Cluster
	d    *v1alpha1.EtcdDefrag
	orig *v1alpha1.EtcdDefrag
}

// Reconcile does at most one member of one EtcdDefrag of cluster
// clusterName and records it. A final phase is never left.
func (r *Reconciler) Reconcile(ctx context.Context, clusterName string, req types.NamespacedName) (ctrl.Result, error) {
	d := &v1alpha1.EtcdDefrag{}
	ctx, cl, done, err := workload.Open(ctx, r.Clusters, clusterName, req, d)
	defer done()
	if err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if d.Status.Phase.Terminal() || d.DeletionTimestamp != nil {
		observeFinal(cl.Name, d)
		return ctrl.Result{}, nil
	}
	o := r.Options
	if o.Requeue == 0 {
		o = DefaultOptions()
	}
	st := &run{o: o, cl: cl, d: d, orig: d.DeepCopy()}
	res, err := st.step(ctx)
	werr := st.writeStatus(ctx)
	if werr == nil && d.Status.Phase.Terminal() {
		countFinal(cl.Name, d)
		observeFinal(cl.Name, d)
	}
	if werr != nil && err == nil {
		err = werr
	}
	return res, err
}

func (st *run) step(ctx context.Context) (ctrl.Result, error) {
	d := st.d
	if d.Status.Phase == "" {
		d.Status.Phase = v1alpha1.DefragPending
	}
	ec := &v1alpha1.EtcdCluster{}
	if err := st.cl.Client.Get(ctx, types.NamespacedName{Namespace: d.Namespace, Name: d.Spec.ClusterRef.Name}, ec); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		return st.wait(fmt.Sprintf("EtcdCluster %s not found", d.Spec.ClusterRef.Name))
	}
	if older, err := st.olderUnfinished(ctx); err != nil || older != "" {
		if err != nil {
			return ctrl.Result{}, err
		}
		return st.wait(fmt.Sprintf("EtcdDefrag %s of the same cluster runs first", older))
	}
	v, why, err := look(ctx, st.cl, ec)
	if err != nil {
		return ctrl.Result{}, err
	}
	if why != "" {
		return st.wait(why)
	}
	m, role := v.next(func(name string) bool { return d.Status.Result(name) != nil })
	if m == nil {
		disarmed, err := st.disarmNoSpace(ctx, v)
		if err != nil {
			return ctrl.Result{}, err
		}
		st.complete(disarmed)
		return ctrl.Result{}, nil
	}
	if res, wait := st.mayDefrag(ctx, v, m); wait {
		return res, nil
	}
	if d.Status.Phase == v1alpha1.DefragPending {
		now := metav1.Now()
		d.Status.Phase, d.Status.StartedAt = v1alpha1.DefragRunning, &now
	}
	res := st.do(ctx, v, m, role)
	st.record(res)
	if res.Outcome == v1alpha1.DefragOutcomeFailed {
		st.finish(v1alpha1.DefragFailed, metav1.ConditionFalse, v1alpha1.ReasonDefragFailed,
			fmt.Sprintf("member %s: %s; the members after it were left alone", res.Member, res.Message))
		return ctrl.Result{}, nil
	}
	st.setReady(metav1.ConditionFalse, v1alpha1.ReasonDefragInProgress,
		fmt.Sprintf("%d of %d members done; member %s (%s) %s", len(d.Status.Members), len(v.members), res.Member, res.Role, res.Outcome))
	// The status write wakes the reconciler for the next member at once;
	// the requeue is for a lost event. The member just done must answer
	// Status again in the health check before the next one.
	return ctrl.Result{RequeueAfter: st.o.Requeue}, nil
}

// mayDefrag asks what every other disruption asks before m is
// defragmented (a member serves nothing while it runs): not while the
// cluster is paused, and only with a token of the shared gate, which
// serves heals first. A defrag that frees a NOSPACE cluster is a heal
// itself. A member under the thresholds is only skipped: nothing to ask.
func (st *run) mayDefrag(ctx context.Context, v *view, m *member) (ctrl.Result, bool) {
	if underThreshold(st.d.Spec.DefragThresholds, m.status.DBSize, m.status.DBSizeInUse) != "" {
		return ctrl.Result{}, false
	}
	if st.cl.IsPaused() {
		res, _ := st.wait("destructive actions are paused for this cluster")
		return res, true
	}
	if st.cl.Gate == nil {
		return ctrl.Result{}, false
	}
	action := gate.Defrag
	if v.noSpace() {
		action = gate.NoSpaceDefrag
	}
	dec := st.cl.Gate.Reserve(ctx, gate.Request{Cluster: st.cl.Name, Namespace: st.d.Namespace,
		EtcdCluster: st.d.Spec.ClusterRef.Name, Member: m.m.Name, Action: action})
	if dec.Delay > 0 {
		st.setReady(metav1.ConditionFalse, v1alpha1.ReasonDefragWaiting,
			fmt.Sprintf("member %s: waiting for the shared replacement rate limiter, which serves heals first", m.m.Name))
		return ctrl.Result{RequeueAfter: dec.Delay}, true
	}
	return ctrl.Result{}, false
}

// do defragments m unless it is under the thresholds, and returns its
// result.
func (st *run) do(ctx context.Context, v *view, m *member, role v1alpha1.DefragRole) v1alpha1.DefragMemberResult {
	s := m.status
	res := v1alpha1.DefragMemberResult{Member: m.m.Name, MemberID: fmt.Sprintf("%016x", s.MemberID), Role: role,
		DBSizeBefore: s.DBSize, DBSizeInUseBefore: s.DBSizeInUse}
	if why := underThreshold(st.d.Spec.DefragThresholds, s.DBSize, s.DBSizeInUse); why != "" {
		res.Outcome, res.Message, res.Time = v1alpha1.DefragOutcomeSkipped, why, metav1.Now()
		return res
	}
	maint, ok := st.cl.Etcd.(etcd.Maintainer)
	if !ok {
		res.Outcome, res.Message, res.Time = v1alpha1.DefragOutcomeFailed, "this manager's etcd access cannot defragment", metav1.Now()
		return res
	}
	err := maint.Defragment(ctx, v.target, m.endpoint)
	res.Time = metav1.Now()
	if err != nil {
		res.Outcome, res.Message = v1alpha1.DefragOutcomeFailed, err.Error()
		return res
	}
	res.Outcome = v1alpha1.DefragOutcomeDefragmented
	if after, err := st.cl.Etcd.Status(ctx, v.target, m.endpoint); err != nil {
		res.Message = fmt.Sprintf("size after defragmentation unknown: %v", err)
	} else {
		res.DBSizeAfter = after.DBSize
	}
	return res
}

// record adds res to the status and says so in an Event.
func (st *run) record(res v1alpha1.DefragMemberResult) {
	d := st.d
	d.Status.Members = append(d.Status.Members, res)
	switch res.Outcome {
	case v1alpha1.DefragOutcomeDefragmented:
		d.Status.Defragmented++
		if res.DBSizeAfter > 0 && res.DBSizeAfter < res.DBSizeBefore {
			d.Status.ReclaimedBytes += res.DBSizeBefore - res.DBSizeAfter
		}
		st.cl.Recorder.Eventf(d, corev1.EventTypeNormal, "MemberDefragmented", "member %s (%s): database %d -> %d bytes",
			res.Member, res.Role, res.DBSizeBefore, res.DBSizeAfter)
	case v1alpha1.DefragOutcomeSkipped:
		st.cl.Recorder.Eventf(d, corev1.EventTypeNormal, "MemberSkipped", "member %s (%s): %s", res.Member, res.Role, res.Message)
	case v1alpha1.DefragOutcomeFailed:
		st.cl.Recorder.Eventf(d, corev1.EventTypeWarning, v1alpha1.ReasonDefragFailed, "member %s (%s): %s", res.Member, res.Role, res.Message)
	}
}

// olderUnfinished names an unfinished EtcdDefrag of the same cluster that
// goes first (the oldest goes first), or "": one member at a time holds
// across EtcdDefrags too.
func (st *run) olderUnfinished(ctx context.Context) (string, error) {
	var list v1alpha1.EtcdDefragList
	if err := st.cl.Client.List(ctx, &list, client.InNamespace(st.d.Namespace)); err != nil {
		return "", err
	}
	for i := range list.Items {
		o := &list.Items[i]
		if o.Name == st.d.Name || o.Spec.ClusterRef.Name != st.d.Spec.ClusterRef.Name || o.Status.Phase.Terminal() {
			continue
		}
		if o.Status.Phase == v1alpha1.DefragRunning || before(o, st.d) {
			return o.Name, nil
		}
	}
	return "", nil
}

func before(a, b *v1alpha1.EtcdDefrag) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

func (st *run) wait(why string) (ctrl.Result, error) {
	st.setReady(metav1.ConditionFalse, v1alpha1.ReasonDefragWaiting, why)
	return ctrl.Result{RequeueAfter: st.o.Requeue}, nil
}

// disarmNoSpace clears the cluster's NOSPACE alarms once this run has
// defragmented a member and a member still reports one: the space is
// free, but etcd refuses writes until the alarm is disarmed. A cluster
// still over its quota raises it again at the next write. It returns how
// many alarms it cleared.
func (st *run) disarmNoSpace(ctx context.Context, v *view) (int, error) {
	if st.d.Status.Defragmented == 0 || !v.noSpace() {
		return 0, nil
	}
	maint, ok := st.cl.Etcd.(etcd.Maintainer)
	if !ok {
		return 0, nil
	}
	n, err := maint.DisarmNoSpace(ctx, v.target)
	if err != nil {
		return 0, err
	}
	st.cl.Recorder.Eventf(st.d, corev1.EventTypeNormal, v1alpha1.ReasonNoSpaceDisarmed,
		"the NOSPACE alarm of %d members was disarmed: etcd takes writes again", n)
	return n, nil
}

func (st *run) complete(disarmed int) {
	d := st.d
	msg := fmt.Sprintf("%d members defragmented, %d skipped, %d bytes reclaimed", d.Status.Defragmented,
		len(d.Status.Members)-int(d.Status.Defragmented), d.Status.ReclaimedBytes)
	if disarmed > 0 {
		msg += fmt.Sprintf("; NOSPACE alarm disarmed on %d members", disarmed)
	}
	st.finish(v1alpha1.DefragComplete, metav1.ConditionTrue, v1alpha1.ReasonDefragDone, msg)
	st.cl.Recorder.Eventf(d, corev1.EventTypeNormal, v1alpha1.ReasonDefragDone, "%s", meta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionReady).Message)
}

func (st *run) finish(phase v1alpha1.DefragPhase, status metav1.ConditionStatus, reason, msg string) {
	now := metav1.Now()
	st.d.Status.Phase, st.d.Status.CompletedAt = phase, &now
	if st.d.Status.StartedAt == nil {
		st.d.Status.StartedAt = &now
	}
	st.setReady(status, reason, msg)
}

func (st *run) setReady(status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&st.d.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: status,
		Reason: reason, Message: msg, ObservedGeneration: st.d.Generation})
}

// writeStatus writes the status when it changed, with optimistic locking:
// a member's result is never written over by a stale copy.
func (st *run) writeStatus(ctx context.Context) error {
	if equality.Semantic.DeepEqual(st.orig.Status, st.d.Status) {
		return nil
	}
	return st.cl.Client.Status().Update(ctx, st.d)
}
