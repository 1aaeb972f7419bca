package etcdsnapshot

import (
	"context"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
)

// VerifyJobName is the Job that checks the stored copy of a Complete
// EtcdSnapshot against its artifact (BuildVerifyJob).
func VerifyJobName(snap string) string { return snap + "-verify" }

// verifyBackoffLimit: a check is one read of the object; two retries
// ride out a store that blinks, and a longer wait only delays the
// fallback to an older snapshot.
const verifyBackoffLimit = 2

// BuildVerifyJob is the Job that reads the stored snapshot of Complete
// EtcdSnapshot s back and compares it with s.Status.Artifact (size,
// sha256, and the object's ETag when recorded) and etcd's own trailing
// hash (agent.Check), in the snapshot's
// namespace with the snapshot's S3 credentials or claim (mounted
// read-only), before a restore after total loss removes anything. It
// never dials etcd. The caller sets s as its controller.
func BuildVerifyJob(s *v1alpha1.EtcdSnapshot, o Options) *batchv1.Job {
	a := s.Status.Artifact
	cfg := agent.Config{CheckSHA256: a.SHA256, CheckSize: a.SizeBytes, ETag: a.ETag,
		TerminationMessagePath: corev1.TerminationMessagePathDefault, Timeout: agent.DefaultTimeout}
	var v volumes
	v.storage(s, &cfg)
	for i := range v.list {
		if c := v.list[i].PersistentVolumeClaim; c != nil {
			c.ReadOnly, v.mounts[i].ReadOnly = true, true
		}
	}
	return agentJob(s, VerifyJobName(s.Name), cfg, v, verifyBackoffLimit, o.ActiveDeadline, o)
}

// VerifyOutcome is what a verify Job (BuildVerifyJob) found.
type VerifyOutcome struct {
	// Done: the Job ended; Verified: the stored copy is what the
	// artifact says. Message is the agent's error when not.
	Done, Verified bool
	Message        string
	// At is when the Job ended.
	At time.Time
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
		return VerifyOutcome{Done: true, Verified: true, At: at}, nil
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
