package etcdsnapshot

import (
	"context"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// pausedRecheck is how often a snapshot held by a pause looks again: the
// pause ends with no event the snapshot watches, and a backup that starts
// within 15 s of it is on time.
const pausedRecheck = 15 * time.Second

// Reconciler reconciles EtcdSnapshots in any workload cluster.
type Reconciler struct {
	Clusters workload.Source
	Options  Options
}

// run is the state of one reconcile.
type run struct {
	o    Options
	cl   *workload.Cluster
	s    *v1alpha1.EtcdSnapshot
	orig *v1alpha1.EtcdSnapshot
}

// Reconcile moves one EtcdSnapshot of cluster clusterName through its
// phases. A final phase is never left.
func (r *Reconciler) Reconcile(ctx context.Context, clusterName string, req types.NamespacedName) (ctrl.Result, error) {
	s := &v1alpha1.EtcdSnapshot{}
	ctx, cl, done, err := workload.Open(ctx, r.Clusters, clusterName, req, s)
	defer done()
	if err != nil {
		if apierrors.IsNotFound(err) {
			releaseSlot(cl, req)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if handled, res, err := r.cleanup(ctx, cl, s); handled || err != nil {
		return res, err
	}
	if s.Status.Phase.Terminal() || s.DeletionTimestamp != nil {
		releaseSlot(cl, req)
		observeComplete(cl.Name, s)
		return ctrl.Result{}, nil
	}
	st := &run{o: r.Options, cl: cl, s: s, orig: s.DeepCopy()}
	res, err := st.step(ctx)
	werr := st.writeStatus(ctx)
	if werr == nil && s.Status.Phase.Terminal() {
		releaseSlot(cl, req)
		countFinal(cl.Name, s)
		observeComplete(cl.Name, s)
	}
	st.holdSlot()
	if werr != nil && err == nil {
		err = werr
	}
	return res, err
}

func (st *run) step(ctx context.Context) (ctrl.Result, error) {
	s := st.s
	if s.Status.Phase == "" {
		s.Status.Phase = v1alpha1.SnapshotPending
	}
	job := &batchv1.Job{}
	err := st.cl.Client.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: JobName(s.Name)}, job)
	switch {
	case apierrors.IsNotFound(err) && s.Status.Phase == v1alpha1.SnapshotStarted:
		// The cache may simply not have seen the Job this reconciler just
		// created (the Started status write can reach us first); only the
		// apiserver can say it is gone.
		if gone, err := st.jobGone(ctx); err != nil || !gone {
			return ctrl.Result{RequeueAfter: time.Second}, err
		}
		// The Job went away before it reported (deleted by hand, or its
		// TTL passed while we were away): the outcome is unknown, and a
		// snapshot runs at most once.
		st.fail(v1alpha1.ReasonSnapshotJobLost, fmt.Sprintf("job %s disappeared before it reported; create a new EtcdSnapshot to retry", JobName(s.Name)))
		return ctrl.Result{}, nil
	case apierrors.IsNotFound(err):
		if dup, err := st.duplicate(ctx); err != nil || dup {
			return ctrl.Result{}, err
		}
		return st.createJob(ctx)
	case err != nil:
		return ctrl.Result{}, err
	case !metav1.IsControlledBy(job, s):
		st.fail(v1alpha1.ReasonJobFailed, fmt.Sprintf("job %s exists and is not this snapshot's", job.Name))
		return ctrl.Result{}, nil
	}
	return st.observe(ctx, job)
}

// createJob starts the snapshot when its cluster has a member to dial.
func (st *run) createJob(ctx context.Context) (ctrl.Result, error) {
	s := st.s
	ec := &v1alpha1.EtcdCluster{}
	if err := st.cl.Client.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: s.Spec.ClusterRef.Name}, ec); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		st.setReady(metav1.ConditionFalse, v1alpha1.ReasonClusterNotFound, fmt.Sprintf("EtcdCluster %s not found", s.Spec.ClusterRef.Name))
		return ctrl.Result{RequeueAfter: st.o.Requeue}, nil
	}
	all, err := etcd.Members(ctx, st.cl.Client, s.Namespace, ec.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	members := etcd.Select(all, "")
	if s.Spec.MemberName != "" {
		members = onlyMember(all, s.Spec.MemberName)
	}
	if len(members) == 0 {
		msg := fmt.Sprintf("EtcdCluster %s has no running member yet", ec.Name)
		if s.Spec.MemberName != "" {
			msg = fmt.Sprintf("member %s of EtcdCluster %s has no Pod", s.Spec.MemberName, ec.Name)
		}
		st.setReady(metav1.ConditionFalse, v1alpha1.ReasonClusterNotFound, msg)
		return ctrl.Result{RequeueAfter: st.o.Requeue}, nil
	}
	if st.cl.IsPaused() {
		// The pause is an emergency stop: no Job streams a keyspace out
		// while it holds. It ends with no event this snapshot watches.
		st.setReady(metav1.ConditionFalse, v1alpha1.ReasonHeldWhilePaused,
			"held: work is paused in this cluster (its registration or the Fleet); the snapshot starts once the pause ends")
		return ctrl.Result{RequeueAfter: pausedRecheck}, nil
	}
	res, cancel, ok := st.acquireSlot(ctx)
	if !ok {
		return res, nil
	}
	job := BuildJob(s, members, st.o)
	if err := controllerutil.SetControllerReference(s, job, st.cl.Client.Scheme()); err != nil {
		cancel()
		return ctrl.Result{}, err
	}
	if err := st.cl.Client.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
		cancel()
		return ctrl.Result{}, err
	}
	now := metav1.Now()
	s.Status.Phase, s.Status.JobName, s.Status.StartedAt = v1alpha1.SnapshotStarted, job.Name, &now
	st.setReady(metav1.ConditionFalse, v1alpha1.ReasonJobCreated, fmt.Sprintf("job %s streams a snapshot of %s to %s", job.Name, ec.Name, URI(s)))
	return ctrl.Result{}, nil
}

// observe follows the Job to its end and records the outcome.
func (st *run) observe(ctx context.Context, job *batchv1.Job) (ctrl.Result, error) {
	s := st.s
	if s.Status.Phase == v1alpha1.SnapshotPending { // the Job was created, its status write lost
		s.Status.Phase, s.Status.JobName = v1alpha1.SnapshotStarted, job.Name
		s.Status.StartedAt = &job.CreationTimestamp
	}
	switch {
	case jobCondition(job, batchv1.JobComplete):
		msg, err := st.lastMessage(ctx, job, corev1.PodSucceeded)
		if err != nil {
			return ctrl.Result{}, err
		}
		res, err := agent.ParseResult(msg)
		if err != nil {
			st.fail(v1alpha1.ReasonJobFailed, err.Error())
			return ctrl.Result{}, nil
		}
		now := metav1.Now()
		s.Status.Phase, s.Status.CompletedAt = v1alpha1.SnapshotComplete, &now
		s.Status.Artifact = &v1alpha1.SnapshotArtifact{URI: URI(s), SizeBytes: res.SizeBytes, SHA256: res.SHA256, Revision: res.Revision, ETag: res.ETag}
		st.setReady(metav1.ConditionTrue, v1alpha1.ReasonSnapshotStored,
			fmt.Sprintf("%d bytes at revision %d stored at %s and verified", res.SizeBytes, res.Revision, s.Status.Artifact.URI))
		st.cl.Recorder.Eventf(s, corev1.EventTypeNormal, v1alpha1.ReasonSnapshotStored, "stored %s (%d bytes, revision %d)", s.Status.Artifact.URI, res.SizeBytes, res.Revision)
	case jobCondition(job, batchv1.JobFailed):
		msg, err := st.lastMessage(ctx, job, corev1.PodFailed)
		if err != nil {
			return ctrl.Result{}, err
		}
		reason := conditionMessage(job, batchv1.JobFailed)
		if msg != "" {
			reason += ": " + strings.TrimSpace(msg)
		}
		why := v1alpha1.ReasonJobFailed
		if strings.HasPrefix(msg, agent.ErrObjectExists.Error()+": ") {
			// The agent refused to replace what the location held.
			why = v1alpha1.ReasonObjectExists
		}
		st.fail(why, reason)
		st.cl.Recorder.Eventf(s, corev1.EventTypeWarning, why, "snapshot failed: %s", reason)
	case job.Status.Active > 0:
		st.setReady(metav1.ConditionFalse, v1alpha1.ReasonJobRunning, fmt.Sprintf("job %s is running", job.Name))
	}
	return ctrl.Result{}, nil
}

// lastMessage is the agent's termination message in the newest Pod of the
// Job in phase; "" when there is none (the Pod may already be gone). The
// Pods are read from the apiserver: the Job's condition may be in the
// cache before its Pod's final status is.
func (st *run) lastMessage(ctx context.Context, job *batchv1.Job, phase corev1.PodPhase) (string, error) {
	return podMessage(ctx, st.cl.Reader, job, st.s.Name, phase)
}

// podMessage is lastMessage for Job job of snapshot snap, read from r.
func podMessage(ctx context.Context, r client.Reader, job *batchv1.Job, snap string, phase corev1.PodPhase) (string, error) {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(job.Namespace), client.MatchingLabels{LabelSnapshot: snap}); err != nil {
		return "", err
	}
	var newest *corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase == phase && metav1.IsControlledBy(p, job) && (newest == nil || newest.CreationTimestamp.Before(&p.CreationTimestamp)) {
			newest = p
		}
	}
	if newest == nil {
		return "", nil
	}
	for _, cs := range newest.Status.ContainerStatuses {
		if cs.Name == containerID && cs.State.Terminated != nil {
			return cs.State.Terminated.Message, nil
		}
	}
	return "", nil
}

func jobCondition(job *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func conditionMessage(job *batchv1.Job, t batchv1.JobConditionType) string {
	for _, c := range job.Status.Conditions {
		if c.Type == t {
			return fmt.Sprintf("job %s: %s", job.Name, strings.TrimSpace(c.Reason+" "+c.Message))
		}
	}
	return "job " + job.Name
}

func (st *run) fail(reason, msg string) {
	now := metav1.Now()
	st.s.Status.Phase, st.s.Status.CompletedAt = v1alpha1.SnapshotFailed, &now
	st.setReady(metav1.ConditionFalse, reason, msg)
}

func (st *run) setReady(status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&st.s.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: status,
		Reason: reason, Message: msg, ObservedGeneration: st.s.Generation})
}

// writeStatus writes the status when it changed, with optimistic locking:
// two writers racing to a final phase cannot both win.
func (st *run) writeStatus(ctx context.Context) error {
	if equality.Semantic.DeepEqual(st.orig.Status, st.s.Status) {
		return nil
	}
	return st.cl.Client.Status().Update(ctx, st.s)
}

// onlyMember is the member of spec.memberName, when it has a Pod to dial.
func onlyMember(all []v1alpha1.EtcdMember, name string) []v1alpha1.EtcdMember {
	for _, m := range all {
		if m.Name == name && m.Status.PodName != "" && m.DeletionTimestamp == nil {
			return []v1alpha1.EtcdMember{m}
		}
	}
	return nil
}

// jobGone asks the apiserver, not the cache, whether the snapshot's Job
// is gone.
func (st *run) jobGone(ctx context.Context) (bool, error) {
	job := &batchv1.Job{}
	err := st.cl.Reader.Get(ctx, types.NamespacedName{Namespace: st.s.Namespace, Name: JobName(st.s.Name)}, job)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
}
