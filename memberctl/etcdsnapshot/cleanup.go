package etcdsnapshot

import (
	"context"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// CleanupJobName is the Job that deletes the stored snapshot of a deleted
// EtcdSnapshot with deletionPolicy Delete.
func CleanupJobName(snap string) string { return snap + "-cleanup" }

// cleanupDeadline bounds a cleanup Job: each try is one delete request
// (agent.Delete bounds it to 2 min), and the Job's retries back off to at
// most a few minutes; beyond that the store is down, and CleanupRetry
// starts over.
const cleanupDeadline = 15 * time.Minute

// cleanup handles deletionPolicy Delete: it adds the finalizer while the
// snapshot lives and, once the snapshot is deleted, removes the stored
// snapshot before the finalizer. handled reports that Reconcile has
// nothing more to do.
func (r *Reconciler) cleanup(ctx context.Context, cl *workload.Cluster, s *v1alpha1.EtcdSnapshot) (handled bool, res ctrl.Result, err error) {
	has := controllerutil.ContainsFinalizer(s, v1alpha1.FinalizerSnapshotCleanup)
	if s.DeletionTimestamp == nil {
		if s.Spec.DeletionPolicy != v1alpha1.DeletionDelete || has {
			return false, ctrl.Result{}, nil
		}
		patch := client.MergeFrom(s.DeepCopy())
		controllerutil.AddFinalizer(s, v1alpha1.FinalizerSnapshotCleanup)
		return false, ctrl.Result{}, cl.Client.Patch(ctx, s, patch)
	}
	if !has {
		return false, ctrl.Result{}, nil
	}
	st := &run{o: r.Options, cl: cl, s: s, orig: s.DeepCopy()}
	res, err = st.removeStored(ctx)
	if werr := st.writeStatus(ctx); werr != nil && err == nil && !apierrors.IsNotFound(werr) {
		err = werr
	}
	return true, res, err
}

// removeStored runs the cleanup Job and drops the finalizer once it
// succeeded, or at once when nothing was stored or the stored snapshot is
// to be kept.
func (st *run) removeStored(ctx context.Context) (ctrl.Result, error) {
	s := st.s
	stored, err := st.mayHaveStored(ctx)
	if err != nil || stored == waitForSnapshot {
		return ctrl.Result{}, err
	}
	if stored == nothingStored {
		return ctrl.Result{}, st.dropFinalizer(ctx)
	}
	if keep, err := st.ownerGoing(ctx); err != nil || keep {
		if keep {
			st.setCleanedUp(metav1.ConditionFalse, v1alpha1.ReasonStoredSnapshotKept, "the EtcdCluster that scheduled it is being deleted; "+URI(s)+" is kept")
			st.cl.Recorder.Eventf(s, corev1.EventTypeNormal, v1alpha1.ReasonStoredSnapshotKept,
				"kept %s: the EtcdCluster that scheduled it is being deleted, and its backups are what it is restored from", URI(s))
			err = st.dropFinalizer(ctx)
		}
		return ctrl.Result{}, err
	}
	job := &batchv1.Job{}
	err = st.cl.Client.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: CleanupJobName(s.Name)}, job)
	switch {
	case apierrors.IsNotFound(err):
		return st.startCleanup(ctx)
	case err != nil:
		return ctrl.Result{}, err
	case job.DeletionTimestamp != nil:
		// The failed try is still going away; its deletion wakes us.
		return ctrl.Result{}, nil
	case jobCondition(job, batchv1.JobComplete):
		st.cl.Recorder.Eventf(s, corev1.EventTypeNormal, v1alpha1.ReasonStoredSnapshotDeleted, "deleted %s", URI(s))
		return ctrl.Result{}, st.dropFinalizer(ctx)
	case jobCondition(job, batchv1.JobFailed):
		return st.cleanupFailed(ctx, job)
	}
	return ctrl.Result{}, nil
}

// What a deleted snapshot may have stored.
type storedState int

const (
	nothingStored storedState = iota
	waitForSnapshot
	maybeStored
)

// mayHaveStored: a snapshot that never got a Job stored nothing; one whose
// Job still runs is waited for (its end wakes us), so that the cleanup
// cannot run before the upload it should remove.
func (st *run) mayHaveStored(ctx context.Context) (storedState, error) {
	job := &batchv1.Job{}
	err := st.cl.Client.Get(ctx, types.NamespacedName{Namespace: st.s.Namespace, Name: JobName(st.s.Name)}, job)
	switch {
	case apierrors.IsNotFound(err):
		if st.s.Status.Phase == "" || st.s.Status.Phase == v1alpha1.SnapshotPending {
			return nothingStored, nil
		}
		return maybeStored, nil
	case err != nil:
		return 0, err
	case metav1.IsControlledBy(job, st.s) && !jobCondition(job, batchv1.JobComplete) && !jobCondition(job, batchv1.JobFailed):
		st.setCleanedUp(metav1.ConditionFalse, v1alpha1.ReasonCleanupRunning, "waiting for snapshot job "+job.Name+" to end")
		return waitForSnapshot, nil
	}
	return maybeStored, nil
}

// ownerGoing reports whether the EtcdCluster controlling s (a scheduled
// snapshot) is gone or being deleted: then the deletion comes from the
// cluster's, not from retention, and the stored snapshot is kept.
func (st *run) ownerGoing(ctx context.Context) (bool, error) {
	ref := metav1.GetControllerOf(st.s)
	if ref == nil || ref.Kind != "EtcdCluster" {
		return false, nil
	}
	ec := &v1alpha1.EtcdCluster{}
	err := st.cl.Reader.Get(ctx, types.NamespacedName{Namespace: st.s.Namespace, Name: ref.Name}, ec)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return ec.UID != ref.UID || ec.DeletionTimestamp != nil, nil
}

func (st *run) startCleanup(ctx context.Context) (ctrl.Result, error) {
	s := st.s
	cfg := agent.Config{Delete: true, TerminationMessagePath: corev1.TerminationMessagePathDefault}
	if a := s.Status.Artifact; a != nil {
		// Only the snapshot's own object: one that replaced it is left,
		// and the cleanup fails naming it (agent.ErrObjectChanged).
		cfg.ETag = a.ETag
	}
	var v volumes
	v.storage(s, &cfg)
	job := agentJob(s, CleanupJobName(s.Name), cfg, v, st.o.CleanupBackoffLimit, cleanupDeadline, st.o)
	if err := controllerutil.SetControllerReference(s, job, st.cl.Client.Scheme()); err != nil {
		return ctrl.Result{}, err
	}
	if err := st.cl.Client.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, err
	}
	st.setCleanedUp(metav1.ConditionFalse, v1alpha1.ReasonCleanupRunning, fmt.Sprintf("job %s deletes %s", job.Name, URI(s)))
	return ctrl.Result{}, nil
}

// cleanupFailed reports the agent's error and replaces the Job after
// CleanupRetry. The snapshot stays (with its finalizer) until a try
// succeeds: its cluster is never blocked, as nothing waits for it.
func (st *run) cleanupFailed(ctx context.Context, job *batchv1.Job) (ctrl.Result, error) {
	msg, err := st.lastMessage(ctx, job, corev1.PodFailed)
	if err != nil {
		return ctrl.Result{}, err
	}
	reason := conditionMessage(job, batchv1.JobFailed)
	if msg != "" {
		reason += ": " + strings.TrimSpace(msg)
	}
	prev := meta.FindStatusCondition(st.s.Status.Conditions, v1alpha1.ConditionCleanedUp)
	if prev == nil || prev.Reason != v1alpha1.ReasonCleanupFailed {
		st.setCleanedUp(metav1.ConditionFalse, v1alpha1.ReasonCleanupFailed, reason+"; retried in "+st.o.CleanupRetry.String())
		st.cl.Recorder.Eventf(st.s, corev1.EventTypeWarning, v1alpha1.ReasonCleanupFailed, "deleting %s failed: %s", URI(st.s), reason)
		return ctrl.Result{RequeueAfter: st.o.CleanupRetry}, nil
	}
	if wait := time.Until(prev.LastTransitionTime.Add(st.o.CleanupRetry)); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	err = st.cl.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground))
	return ctrl.Result{}, client.IgnoreNotFound(err)
}

func (st *run) dropFinalizer(ctx context.Context) error {
	patch := client.MergeFrom(st.s.DeepCopy())
	controllerutil.RemoveFinalizer(st.s, v1alpha1.FinalizerSnapshotCleanup)
	err := st.cl.Client.Patch(ctx, st.s, patch)
	// The object is gone with its last finalizer: nothing left to write.
	st.orig = st.s.DeepCopy()
	return client.IgnoreNotFound(err)
}

func (st *run) setCleanedUp(status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&st.s.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionCleanedUp, Status: status,
		Reason: reason, Message: msg, ObservedGeneration: st.s.Generation})
}
