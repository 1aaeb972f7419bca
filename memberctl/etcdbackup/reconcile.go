package etcdbackup

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdsnapshot"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// Event reasons on the EtcdCluster.
const (
	ReasonBackupStarted = "BackupStarted"
	ReasonBackupPruned  = "BackupPruned"
)

// Options tune the Reconciler. Defaults live in DefaultOptions.
type Options struct {
	// Grace is how long after its due time a scheduled snapshot may take to
	// complete before BackedUp turns False (BackupBehindSchedule). It covers
	// waiting for a start (pacing, a cluster still coming up) and the run.
	Grace time.Duration
}

// DefaultOptions returns the defaults.
func DefaultOptions() Options {
	// The snapshot Job's own deadline: a run not Complete by then is stuck
	// or has not started, and either way the newest backup is older than
	// the schedule promises. A shorter grace would flag slow but healthy
	// snapshots of large clusters.
	return Options{Grace: etcdsnapshot.DefaultOptions().ActiveDeadline}
}

// Reconciler runs spec.backup of EtcdClusters in any workload cluster.
type Reconciler struct {
	Clusters workload.Source
	Options  Options
	// Snapshot builds the restore drill's verify Jobs (its Image is
	// etcdfleet's agent image); zero is etcdsnapshot.DefaultOptions.
	Snapshot etcdsnapshot.Options
}

// Reconcile schedules, prunes and reports the backups of one EtcdCluster.
func (r *Reconciler) Reconcile(ctx context.Context, clusterName string, req types.NamespacedName) (ctrl.Result, error) {
	ec := &v1alpha1.EtcdCluster{}
	ctx, cl, done, err := workload.Open(ctx, r.Clusters, clusterName, req, ec)
	defer done()
	if err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ec.DeletionTimestamp != nil {
		forgetDrill(clusterName, ec)
		return ctrl.Result{}, nil
	}
	orig := ec.DeepCopy()
	if ec.Spec.Backup == nil {
		ec.Status.Backup = nil
		meta.RemoveStatusCondition(&ec.Status.Conditions, v1alpha1.ConditionBackedUp)
		meta.RemoveStatusCondition(&ec.Status.Conditions, v1alpha1.ConditionRestoreVerified)
		forgetDrill(clusterName, ec)
		return ctrl.Result{}, writeStatus(ctx, cl, orig, ec)
	}
	snaps, err := snapshotsOf(ctx, cl, ec)
	if err != nil {
		return ctrl.Result{}, err
	}
	p := makePlan(ec, snaps, time.Now(), r.Options.Grace)
	if cl.IsPaused() {
		p.holdForPause()
	}
	if p.create != nil {
		if err := createSnapshot(ctx, cl, ec, *p.create); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := prune(ctx, cl, ec, p.prune); err != nil {
		return ctrl.Result{}, err
	}
	prev := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionBackedUp)
	if p.scheduleErr != nil && (prev == nil || prev.Reason != v1alpha1.ReasonBackupInvalidSchedule || prev.Message != p.condition.Message) {
		cl.Recorder.Eventf(ec, corev1.EventTypeWarning, v1alpha1.ReasonBackupInvalidSchedule, "%s", p.condition.Message)
	}
	drill, drillAgain, announce, err := r.drill(ctx, cl, clusterName, ec, snaps)
	if err != nil {
		return ctrl.Result{}, err
	}
	p.status.Verify = drill
	ec.Status.Backup = &p.status
	p.condition.ObservedGeneration = ec.Generation
	meta.SetStatusCondition(&ec.Status.Conditions, p.condition)
	// A failed write is retried with backoff; a result beside an error is
	// ignored by controller-runtime, which logs a warning for each.
	if err := writeStatus(ctx, cl, orig, ec); err != nil {
		return ctrl.Result{}, err
	}
	// Only once the drill's end is recorded: a conflict retries the
	// reconcile, which would otherwise announce the same drill again.
	announce()
	return ctrl.Result{RequeueAfter: sooner(p.requeue, drillAgain)}, nil
}

// drill runs one step of the restore drill (spec.backup.verify) of ec and
// sets its RestoreVerified condition; it returns the new
// status.backup.verify, nil when no drill is asked for (then nothing runs
// and the condition goes), when to look again (0: at no set time), and
// announce, the Event and metrics of a drill that ended, to call once the
// status is written.
func (r *Reconciler) drill(ctx context.Context, cl *workload.Cluster, clusterName string, ec *v1alpha1.EtcdCluster,
	snaps []*v1alpha1.EtcdSnapshot) (_ *v1alpha1.RestoreDrillStatus, _ time.Duration, announce func(), _ error) {
	announce = func() {}
	if ec.Spec.Backup.Verify == nil {
		meta.RemoveStatusCondition(&ec.Status.Conditions, v1alpha1.ConditionRestoreVerified)
		forgetDrill(clusterName, ec)
		return nil, 0, announce, nil
	}
	var prev *v1alpha1.RestoreDrillStatus
	if ec.Status.Backup != nil {
		prev = ec.Status.Backup.Verify
	}
	now := time.Now()
	st := planDrill(ec, snaps, prev, now)
	if st.check != nil {
		o := r.Snapshot
		if o.Image == "" {
			o = etcdsnapshot.DefaultOptions()
		}
		out, err := etcdsnapshot.Verification(ctx, cl.Client, cl.Reader, st.check, o, st.status.LastScheduleTime.Time)
		if err != nil {
			return nil, 0, announce, fmt.Errorf("restore drill of EtcdSnapshot %s: %w", st.check.Name, err)
		}
		st.observe(out, now)
	}
	prevCond := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionRestoreVerified)
	if c := st.condition; c != nil {
		if st.status.CompletionTime != nil && (prev == nil || prev.CompletionTime == nil || !prev.CompletionTime.Equal(st.status.CompletionTime)) {
			// A drill just ended (or could not start): once per drill.
			kind := corev1.EventTypeWarning
			if c.Status == metav1.ConditionTrue {
				kind = corev1.EventTypeNormal
			}
			msg := c.Message
			announce = func() {
				cl.Recorder.Eventf(ec, kind, c.Reason, "%s", msg)
				observeDrill(clusterName, ec, st)
			}
		} else if st.scheduleErr != nil && (prevCond == nil || prevCond.Message != c.Message) {
			msg := c.Message
			announce = func() { cl.Recorder.Eventf(ec, corev1.EventTypeWarning, c.Reason, "%s", msg) }
		}
		c.ObservedGeneration = ec.Generation
		meta.SetStatusCondition(&ec.Status.Conditions, *c)
	}
	return &st.status, st.requeue, announce, nil
}

// sooner is the earlier of two requeues, 0 meaning none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// snapshotsOf lists every EtcdSnapshot of ec, scheduled or not (the last
// good backup may be a hand-made one).
func snapshotsOf(ctx context.Context, cl *workload.Cluster, ec *v1alpha1.EtcdCluster) ([]*v1alpha1.EtcdSnapshot, error) {
	var list v1alpha1.EtcdSnapshotList
	if err := cl.Client.List(ctx, &list, client.InNamespace(ec.Namespace)); err != nil {
		return nil, err
	}
	var out []*v1alpha1.EtcdSnapshot
	for i := range list.Items {
		if list.Items[i].Spec.ClusterRef.Name == ec.Name {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// createSnapshot creates the scheduled snapshot due at due. Its name comes
// from due, so a reconcile on a cache that does not show it yet finds it
// exists instead of starting a second one.
func createSnapshot(ctx context.Context, cl *workload.Cluster, ec *v1alpha1.EtcdCluster, due time.Time) error {
	s, err := NewSnapshot(ec, snapshotName(ec.Name, due), cl.Client.Scheme())
	if err != nil {
		return err
	}
	s.Labels[v1alpha1.LabelScheduled] = "true"
	s.Annotations = map[string]string{v1alpha1.AnnotationScheduledAt: rfc3339(due)}
	err = cl.Client.Create(ctx, s)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create scheduled snapshot %s: %w", s.Name, err)
	}
	cl.Recorder.Eventf(ec, corev1.EventTypeNormal, ReasonBackupStarted, "created EtcdSnapshot %s, due at %s", s.Name, rfc3339(due))
	return nil
}

// Location is where ec's scheduled snapshots (and a survivor's, see
// etcdcluster) go: spec.backup's
// location as a prefix, so that each snapshot gets its own object or file.
// In a bucket the prefix goes on with <namespace>/<cluster>/<uid>/: a fleet
// configured by template gives every cluster the same bucket and prefix,
// and snapshot names (<cluster>-<time>) repeat across namespaces and
// workload clusters, so without it two clusters would overwrite and prune
// each other's objects. A claim is the cluster's own already.
func Location(ec *v1alpha1.EtcdCluster) v1alpha1.SnapshotLocation {
	loc := *ec.Spec.Backup.Location.DeepCopy()
	if loc.S3 != nil {
		loc.S3.Key = asPrefix(loc.S3.Key) + ec.Namespace + "/" + ec.Name + "/" + string(ec.UID) + "/"
	}
	if loc.PVC != nil {
		loc.PVC.Path = asPrefix(loc.PVC.Path)
	}
	return loc
}

func asPrefix(keyOrPath string) string {
	if keyOrPath == "" {
		return ""
	}
	return strings.TrimSuffix(keyOrPath, "/") + "/"
}

// prune deletes the snapshots retention dropped; their deletionPolicy
// Delete removes the stored objects too (memberctl/etcdsnapshot).
func prune(ctx context.Context, cl *workload.Cluster, ec *v1alpha1.EtcdCluster, snaps []*v1alpha1.EtcdSnapshot) error {
	for _, s := range snaps {
		// The precondition keeps a snapshot replaced under the same name
		// (by a person) from being deleted on a stale view.
		err := cl.Client.Delete(ctx, s, client.Preconditions{UID: &s.UID})
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("prune scheduled snapshot %s: %w", s.Name, err)
		}
		if err == nil {
			cl.Recorder.Eventf(ec, corev1.EventTypeNormal, ReasonBackupPruned, "deleted EtcdSnapshot %s (%s) by spec.backup.retention", s.Name, s.Status.Phase)
		}
	}
	return nil
}

// writeStatus writes the status when it changed; the update carries the
// resourceVersion read, so a concurrent writer (the EtcdCluster reconciler)
// yields a conflict and a retry, never a lost field.
func writeStatus(ctx context.Context, cl *workload.Cluster, orig, ec *v1alpha1.EtcdCluster) error {
	if equality.Semantic.DeepEqual(orig.Status, ec.Status) {
		return nil
	}
	if err := cl.Client.Status().Update(ctx, ec); err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	return nil
}

// NewSnapshot is an EtcdSnapshot of ec named name, stored where spec.backup
// stores its snapshots (Location) and owned like them: deletionPolicy
// Delete with the cleanup finalizer set at creation, so that no window
// leaves a stored object unowned, and a controller reference that does
// not block the cluster's deletion (a foreground deletion of the cluster
// must not wait for its backups). The scheduled ones are labelled so;
// the cluster reconciler's (before a roll, of a survivor) are not:
// retention never prunes them and the schedule does not wait on them.
// ec.Spec.Backup must be set.
func NewSnapshot(ec *v1alpha1.EtcdCluster, name string, scheme *runtime.Scheme) (*v1alpha1.EtcdSnapshot, error) {
	s := &v1alpha1.EtcdSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ec.Namespace,
			Labels:     map[string]string{v1alpha1.LabelCluster: ec.Name},
			Finalizers: []string{v1alpha1.FinalizerSnapshotCleanup}},
		Spec: v1alpha1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: ec.Name}, Location: Location(ec),
			DeletionPolicy: v1alpha1.DeletionDelete},
	}
	if err := controllerutil.SetControllerReference(ec, s, scheme); err != nil {
		return nil, err
	}
	s.OwnerReferences[0].BlockOwnerDeletion = ptr.To(false)
	return s, nil
}
