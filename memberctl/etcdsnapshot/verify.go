package etcdsnapshot

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
)

// VerifyJobName is the Job that checks the stored copy of a Complete
// EtcdSnapshot against its artifact (BuildVerifyJob).
func VerifyJobName(snap string) string { return snap + "-verify" }

// verifyBackoffLimit: a check is one read of the object and one restore;
// two retries ride out a store that blinks, and a longer wait only delays
// the fallback to an older snapshot.
const verifyBackoffLimit = 2

// drillDir is the verify Job's scratch emptyDir: the download and the
// throwaway data dir (about twice the snapshot), gone with the Pod. The
// root filesystem is read-only.
const drillDir = "/var/lib/etcdfleet-drill"

// BuildVerifyJob is the Job that proves Complete EtcdSnapshot s restorable
// (a restore drill, restore.Drill in etcdfleet-agent): it reads the stored
// snapshot back and compares it with s.Status.Artifact (size, sha256, and
// the object's ETag when recorded), restores it with etcdutl into a
// throwaway data dir on an emptyDir, starts a throwaway etcd on it (loopback
// only) and reads its revision, which must be at least the artifact's. It
// runs in the snapshot's namespace with the snapshot's S3 credentials or
// claim (mounted read-only) and never dials the cluster's members. A restore
// after total loss runs it before removing anything, and spec.backup.verify
// on its schedule. The caller sets s as its controller (Verification does).
func BuildVerifyJob(s *v1alpha1.EtcdSnapshot, o Options) *batchv1.Job {
	a := s.Status.Artifact
	cfg := agent.Config{CheckSHA256: a.SHA256, CheckSize: a.SizeBytes, ETag: a.ETag, CheckRevision: a.Revision,
		DrillDir: drillDir, TerminationMessagePath: corev1.TerminationMessagePathDefault, Timeout: agent.DefaultTimeout}
	var v volumes
	v.storage(s, &cfg)
	for i := range v.list {
		if c := v.list[i].PersistentVolumeClaim; c != nil {
			c.ReadOnly, v.mounts[i].ReadOnly = true, true
		}
	}
	v.list = append(v.list, corev1.Volume{Name: "drill", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	v.mounts = append(v.mounts, corev1.VolumeMount{Name: "drill", MountPath: drillDir})
	return agentJob(s, VerifyJobName(s.Name), cfg, v, verifyBackoffLimit, o.ActiveDeadline, o)
}

// VerifyOutcome is what a verify Job (BuildVerifyJob) found.
type VerifyOutcome struct {
	// Done: the Job ended; Verified: the stored copy is what the
	// artifact says and restored. Message is the agent's error when not.
	Done, Verified bool
	Message        string
	// At is when the Job ended.
	At time.Time
	// Revision is what the restored etcd served, and Duration how long
	// the drill took by the agent's clock (zero from a Job of a manager
	// before drills).
	Revision int64
	Duration time.Duration
	// InTheWay names a Job of the verify Job's name that s does not
	// control: nothing was started, and nothing can be until it is gone.
	InTheWay string
}

// ReadVerifyJob reads the outcome of verify Job job of snapshot snap: the
// agent's termination message comes from the newest Pod the Job controls,
// read from r (the apiserver, not a cache that may lag the Job).
func ReadVerifyJob(ctx context.Context, r client.Reader, snap string, job *batchv1.Job) (VerifyOutcome, error) {
	switch {
	case jobCondition(job, batchv1.JobComplete):
		at := job.CreationTimestamp.Time
		if job.Status.CompletionTime != nil {
			at = job.Status.CompletionTime.Time
		}
		out := VerifyOutcome{Done: true, Verified: true, At: at}
		msg, err := podMessage(ctx, r, job, snap, corev1.PodSucceeded)
		if err != nil {
			return VerifyOutcome{}, err
		}
		// A Pod that left no parsable result still passed every check
		// (the agent exits 0 only then); the drill's figures are missing.
		if res, err := agent.ParseDrillResult(strings.TrimSpace(msg)); err == nil {
			out.Revision, out.Duration = res.Revision, time.Duration(res.DurationSeconds*float64(time.Second))
		}
		return out, nil
	case jobCondition(job, batchv1.JobFailed):
		msg, err := podMessage(ctx, r, job, snap, corev1.PodFailed)
		if err != nil {
			return VerifyOutcome{}, err
		}
		why := conditionMessage(job, batchv1.JobFailed)
		if msg = strings.TrimSpace(msg); msg != "" {
			why += ": " + msg
		}
		at := job.CreationTimestamp.Time
		for _, c := range job.Status.Conditions {
			if c.Type == batchv1.JobFailed {
				at = c.LastTransitionTime.Time
			}
		}
		return VerifyOutcome{Done: true, Message: why, At: at}, nil
	}
	return VerifyOutcome{}, nil
}

// Verification is the one owner of verify Jobs' lifecycle, for both of
// their callers (the restore after total loss and the restore drill of
// spec.backup.verify): it returns the outcome of s's verify Job when that
// ended at or after since; a Job that ended before is stale and deleted
// (its successor starts at a later call), and with none a Job is started.
// Until an outcome stands, Done is false. c writes (its scheme sets s as
// the Job's controller), r reads the Job and its Pods (the apiserver: a
// cache may lag them).
func Verification(ctx context.Context, c client.Client, r client.Reader, s *v1alpha1.EtcdSnapshot, o Options, since time.Time) (VerifyOutcome, error) {
	job := &batchv1.Job{}
	err := r.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: VerifyJobName(s.Name)}, job)
	switch {
	case apierrors.IsNotFound(err):
		return VerifyOutcome{}, startVerify(ctx, c, s, o)
	case err != nil:
		return VerifyOutcome{}, err
	case job.DeletionTimestamp != nil:
		return VerifyOutcome{}, nil // a stale check going away; its successor starts at a later call
	case !metav1.IsControlledBy(job, s):
		return VerifyOutcome{InTheWay: "Job " + job.Name + " is in the way: it was not made for this snapshot"}, nil
	}
	out, err := ReadVerifyJob(ctx, r, s.Name, job)
	switch {
	case err != nil || !out.Done:
		return VerifyOutcome{}, err
	case out.At.Before(since):
		err := c.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground),
			client.Preconditions{UID: &job.UID})
		return VerifyOutcome{}, client.IgnoreNotFound(err)
	}
	return out, nil
}

func startVerify(ctx context.Context, c client.Client, s *v1alpha1.EtcdSnapshot, o Options) error {
	job := BuildVerifyJob(s, o)
	if err := controllerutil.SetControllerReference(s, job, c.Scheme()); err != nil {
		return err
	}
	if err := c.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("start the check of EtcdSnapshot %s: %w", s.Name, err)
	}
	return nil
}

// CompleteNewestFirst are the Complete snapshots of ec among snaps, the
// newest (by completedAt, then revision) first: what a restore after total
// loss tries in turn, and what a restore drill proves (the first).
// Snapshots created before ec are of an earlier cluster of the same name,
// and are never restored on their own.
func CompleteNewestFirst(snaps []*v1alpha1.EtcdSnapshot, ec *v1alpha1.EtcdCluster) []*v1alpha1.EtcdSnapshot {
	var out []*v1alpha1.EtcdSnapshot
	for _, s := range snaps {
		if s.Spec.ClusterRef.Name != ec.Name || s.Status.Phase != v1alpha1.SnapshotComplete || s.DeletionTimestamp != nil ||
			s.Status.Artifact == nil || s.Status.CompletedAt == nil || s.CreationTimestamp.Before(&ec.CreationTimestamp) {
			continue
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].Status, out[j].Status
		if !a.CompletedAt.Equal(b.CompletedAt) {
			return b.CompletedAt.Before(a.CompletedAt)
		}
		return a.Artifact.Revision > b.Artifact.Revision
	})
	return out
}
