package etcddefrag

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/schedule"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// ScheduleReconciler creates the EtcdDefrags of EtcdClusters with
// spec.defrag when they are due, and deletes the oldest finished ones.
type ScheduleReconciler struct {
	Clusters workload.Source
	Options  Options
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Reconcile looks at the schedule of one EtcdCluster of cluster
// clusterName: it never writes the EtcdCluster, the scheduled EtcdDefrags
// (labelled LabelDefragSchedule) are its whole state.
func (r *ScheduleReconciler) Reconcile(ctx context.Context, clusterName string, req types.NamespacedName) (ctrl.Result, error) {
	ec := &v1alpha1.EtcdCluster{}
	ctx, cl, done, err := workload.Open(ctx, r.Clusters, clusterName, req, ec)
	defer done()
	if err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	sched := ec.Spec.Defrag
	if sched == nil || ec.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	var list v1alpha1.EtcdDefragList
	// Every EtcdDefrag of the namespace: those made by hand carry no label,
	// and an unfinished one of this cluster holds the scheduled run back.
	if err := cl.Client.List(ctx, &list, client.InNamespace(ec.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	scheduled, busy := sortScheduled(list.Items, ec.Name)
	if err := prune(ctx, cl.Client, scheduled, sched.HistoryLimit); err != nil {
		return ctrl.Result{}, err
	}
	if sched.Suspend {
		return ctrl.Result{}, nil
	}
	last := ec.CreationTimestamp.Time
	if n := len(scheduled); n > 0 {
		last = scheduled[n-1].CreationTimestamp.Time
	}
	due, err := nextRun(ec, last)
	if err != nil {
		cl.Recorder.Event(ec, corev1.EventTypeWarning, v1alpha1.ReasonInvalidDefragSchedule, err.Error())
		return ctrl.Result{}, nil // the spec must change; its update wakes us
	}
	now := r.now()
	if wait := due.Sub(now); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if busy {
		// One EtcdDefrag of a cluster at a time: the run waits for the
		// unfinished one rather than queueing behind it.
		return ctrl.Result{RequeueAfter: r.options().Requeue}, nil
	}
	d := scheduledDefrag(ec, due)
	if err := controllerutil.SetControllerReference(ec, d, cl.Client.Scheme()); err != nil {
		return ctrl.Result{}, err
	}
	if err := cl.Client.Create(ctx, d); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, err
	}
	next, _ := nextRun(ec, now)
	return ctrl.Result{RequeueAfter: next.Sub(now)}, nil
}

func (r *ScheduleReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *ScheduleReconciler) options() Options {
	if r.Options.Requeue == 0 {
		return DefaultOptions()
	}
	return r.Options
}

// sortScheduled returns the cluster's scheduled EtcdDefrags, oldest first,
// and whether any EtcdDefrag of the cluster (scheduled or not) is
// unfinished.
func sortScheduled(all []v1alpha1.EtcdDefrag, cluster string) (scheduled []v1alpha1.EtcdDefrag, busy bool) {
	for _, d := range all {
		if d.Spec.ClusterRef.Name != cluster {
			continue
		}
		if !d.Status.Phase.Terminal() {
			busy = true
		}
		if d.Labels[v1alpha1.LabelDefragSchedule] == "true" {
			scheduled = append(scheduled, d)
		}
	}
	sort.Slice(scheduled, func(i, j int) bool { return before(&scheduled[i], &scheduled[j]) })
	return scheduled, busy
}

// prune deletes the oldest finished scheduled EtcdDefrags beyond limit.
func prune(ctx context.Context, c client.Client, scheduled []v1alpha1.EtcdDefrag, limit int32) error {
	if limit <= 0 {
		limit = 1
	}
	var finished []*v1alpha1.EtcdDefrag
	for i := range scheduled {
		if scheduled[i].Status.Phase.Terminal() {
			finished = append(finished, &scheduled[i])
		}
	}
	for i := 0; i < len(finished)-int(limit); i++ {
		if err := c.Delete(ctx, finished[i]); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// nextRun is the first run of the schedule of ec after last.
func nextRun(ec *v1alpha1.EtcdCluster, last time.Time) (time.Time, error) {
	s, err := schedule.Parse("spec.defrag", ec.Spec.Defrag.Cron, ec.Spec.Defrag.Interval, ec.UID)
	if err != nil {
		return time.Time{}, err
	}
	return s.Next(last), nil
}

// scheduledDefrag is the EtcdDefrag of the run due at due. Its name comes
// from due, so a retried create after a lost response finds it instead of
// making a second one.
func scheduledDefrag(ec *v1alpha1.EtcdCluster, due time.Time) *v1alpha1.EtcdDefrag {
	return &v1alpha1.EtcdDefrag{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ec.Namespace,
			Name:      fmt.Sprintf("%s-defrag-%d", ec.Name, due.Unix()),
			Labels:    map[string]string{v1alpha1.LabelCluster: ec.Name, v1alpha1.LabelDefragSchedule: "true"},
		},
		Spec: v1alpha1.EtcdDefragSpec{ClusterRef: corev1.LocalObjectReference{Name: ec.Name}, DefragThresholds: ec.Spec.Defrag.DefragThresholds},
	}
}
