package etcdbackup

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/schedule"
)

// plan is what one reconcile of an EtcdCluster with spec.backup does. It
// is computed by makePlan from the cluster, its snapshots and the time,
// without any I/O.
type plan struct {
	// create, when set, is the due time of the snapshot to create.
	create *time.Time
	// prune are the scheduled snapshots retention deletes.
	prune []*v1alpha1.EtcdSnapshot
	// status and condition are the cluster's new status.backup and BackedUp.
	status    v1alpha1.BackupStatus
	condition metav1.Condition
	// scheduleErr is a cron expression that does not parse.
	scheduleErr error
	// requeue is when to look again without a watch event (0: never):
	// the next due time, or when a run in flight passes its grace.
	requeue time.Duration
}

// makePlan decides one reconcile. snaps are every EtcdSnapshot of the
// cluster (scheduled or not); grace is how long a due run may take.
func makePlan(ec *v1alpha1.EtcdCluster, snaps []*v1alpha1.EtcdSnapshot, now time.Time, grace time.Duration) plan {
	spec := ec.Spec.Backup
	scheduled := scheduledOf(ec, snaps)
	p := plan{status: lastGood(snaps), prune: toPrune(scheduled, spec.Retention, now)}
	sched, err := parseSchedule(spec, ec.UID)
	if err != nil {
		p.scheduleErr = err
		p.condition = backedUp(metav1.ConditionFalse, v1alpha1.ReasonBackupInvalidSchedule, err.Error()+"; no snapshot is scheduled until it is fixed")
		return p
	}
	base := ec.CreationTimestamp.Time
	var newest *v1alpha1.EtcdSnapshot
	if len(scheduled) > 0 {
		newest = scheduled[0]
		base = scheduledAt(newest)
		p.status.LastScheduleTime = ptrTime(base)
	}
	next := sched.Next(base)
	inFlight := newest != nil && !newest.Status.Phase.Terminal()
	if spec.Suspend {
		p.condition = backedUp(metav1.ConditionFalse, v1alpha1.ReasonBackupSuspended, "spec.backup.suspend is true: no snapshot is scheduled")
		return p
	}
	if !inFlight && !next.After(now) {
		due := schedule.LatestDue(sched, next, now)
		p.create, p.status.LastScheduleTime = &due, ptrTime(due)
		next = sched.Next(due)
		p.condition, p.requeue = runningCondition(scheduled, snapshotName(ec.Name, due), due, now, grace)
	} else if inFlight {
		p.condition, p.requeue = runningCondition(scheduled[1:], newest.Name, scheduledAt(newest), now, grace)
	} else {
		p.condition = endedCondition(newest, next)
	}
	p.status.NextScheduleTime = ptrTime(next)
	if wait := next.Sub(now); wait > 0 && (p.requeue == 0 || wait < p.requeue) {
		p.requeue = wait
	}
	return p
}

// runningCondition is BackedUp while the scheduled snapshot name, due at
// due, runs: behind schedule once its grace has passed; until then what
// the previous scheduled one (older, newest first) says.
func runningCondition(older []*v1alpha1.EtcdSnapshot, name string, due, now time.Time, grace time.Duration) (metav1.Condition, time.Duration) {
	deadline := due.Add(grace)
	if !now.Before(deadline) {
		return backedUp(metav1.ConditionFalse, v1alpha1.ReasonBackupBehindSchedule,
			fmt.Sprintf("snapshot %s, due at %s, has not completed by %s", name, rfc3339(due), rfc3339(deadline))), 0
	}
	i := slices.IndexFunc(older, func(s *v1alpha1.EtcdSnapshot) bool { return s.Status.Phase.Terminal() })
	if i >= 0 && older[i].Status.Phase == v1alpha1.SnapshotFailed {
		c := endedCondition(older[i], time.Time{})
		return c, deadline.Sub(now)
	}
	return backedUp(metav1.ConditionTrue, v1alpha1.ReasonBackupOnSchedule,
		fmt.Sprintf("snapshot %s, due at %s, is running", name, rfc3339(due))), deadline.Sub(now)
}

// endedCondition is BackedUp when no scheduled snapshot runs: newest is
// the newest scheduled one (nil before the first), next the next due time.
func endedCondition(newest *v1alpha1.EtcdSnapshot, next time.Time) metav1.Condition {
	switch {
	case newest == nil:
		return backedUp(metav1.ConditionTrue, v1alpha1.ReasonBackupOnSchedule, "the first scheduled snapshot is due at "+rfc3339(next))
	case newest.Status.Phase == v1alpha1.SnapshotFailed:
		msg := "scheduled snapshot " + newest.Name + " failed"
		if c := meta.FindStatusCondition(newest.Status.Conditions, v1alpha1.ConditionReady); c != nil {
			msg += ": " + c.Message
		}
		return backedUp(metav1.ConditionFalse, v1alpha1.ReasonBackupFailed, msg)
	}
	return backedUp(metav1.ConditionTrue, v1alpha1.ReasonBackupOnSchedule,
		fmt.Sprintf("scheduled snapshot %s completed; the next is due at %s", newest.Name, rfc3339(next)))
}

func backedUp(status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: v1alpha1.ConditionBackedUp, Status: status, Reason: reason, Message: msg}
}

// scheduledOf are the snapshots spec.backup created for ec, newest first.
func scheduledOf(ec *v1alpha1.EtcdCluster, snaps []*v1alpha1.EtcdSnapshot) []*v1alpha1.EtcdSnapshot {
	var out []*v1alpha1.EtcdSnapshot
	for _, s := range snaps {
		if s.Labels[v1alpha1.LabelScheduled] == "true" && metav1.IsControlledBy(s, ec) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b *v1alpha1.EtcdSnapshot) int { return scheduledAt(b).Compare(scheduledAt(a)) })
	return out
}

// scheduledAt is the due time a scheduled snapshot was created for (its
// creation time if the annotation was tampered with).
func scheduledAt(s *v1alpha1.EtcdSnapshot) time.Time {
	if t, err := time.Parse(time.RFC3339, s.Annotations[v1alpha1.AnnotationScheduledAt]); err == nil {
		return t
	}
	return s.CreationTimestamp.Time
}

// lastGood is the status fields of the newest Complete snapshot of the
// cluster, scheduled or not.
func lastGood(snaps []*v1alpha1.EtcdSnapshot) v1alpha1.BackupStatus {
	var best *v1alpha1.EtcdSnapshot
	for _, s := range snaps {
		if s.Status.Phase != v1alpha1.SnapshotComplete || s.Status.CompletedAt == nil || s.Status.Artifact == nil {
			continue
		}
		if best == nil || best.Status.CompletedAt.Before(s.Status.CompletedAt) {
			best = s
		}
	}
	if best == nil {
		return v1alpha1.BackupStatus{}
	}
	st := v1alpha1.BackupStatus{LastSuccessfulTime: best.Status.CompletedAt.DeepCopy(), LastSnapshotName: best.Name,
		LastSizeBytes: best.Status.Artifact.SizeBytes, LastRevision: best.Status.Artifact.Revision}
	if best.Status.StartedAt != nil {
		st.LastDuration = &metav1.Duration{Duration: best.Status.CompletedAt.Sub(best.Status.StartedAt.Time)}
	}
	return st
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t.UTC())
	return &mt
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// pausedRecheck is how often a paused cluster's schedule looks again: the
// pause ends with no event the EtcdCluster watches.
const pausedRecheck = 15 * time.Second

// holdForPause keeps a paused cluster's plan from acting: the pause holds
// new scheduled snapshots and retention's deletes, while the plan's
// condition still tells how far behind the schedule is.
func (p *plan) holdForPause() {
	p.create, p.prune = nil, nil
	p.requeue = sooner(p.requeue, pausedRecheck)
}
