package etcdbackup

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdsnapshot"
	"github.com/etcdfleet/etcdfleet/memberctl/schedule"
)

// drillPoll is how often a running drill's Job is looked at: this
// controller does not watch Jobs, and a drill of a small snapshot ends in
// seconds, of a large one in minutes.
const drillPoll = 5 * time.Second

// drillStep is what one reconcile does about spec.backup.verify, decided
// by planDrill without I/O.
type drillStep struct {
	// status is the new status.backup.verify.
	status v1alpha1.RestoreDrillStatus
	// condition, when set, is the new RestoreVerified; else it stays.
	condition *metav1.Condition
	// check, when set, is the snapshot whose drill runs: its verify Job's
	// outcome is read (and the Job started) by etcdsnapshot.Verification,
	// accepting outcomes from status.lastScheduleTime on.
	check *v1alpha1.EtcdSnapshot
	// scheduleErr is a cron expression that does not parse.
	scheduleErr error
	// requeue is when to look again without a watch event (0: never).
	requeue time.Duration
}

// planDrill decides the restore drill's step for ec with spec.backup.verify
// set: snaps are every EtcdSnapshot of the cluster, prev the drill's
// status so far. At most one drill runs; a due time that passes while one
// runs is taken once it ended (the newest due time only, as for backups).
func planDrill(ec *v1alpha1.EtcdCluster, snaps []*v1alpha1.EtcdSnapshot, prev *v1alpha1.RestoreDrillStatus, now time.Time) drillStep {
	spec := ec.Spec.Backup.Verify
	var st drillStep
	if prev != nil {
		st.status = *prev.DeepCopy()
	}
	sched, err := schedule.Parse("spec.backup.verify", spec.Cron, spec.Interval, ec.UID)
	if err != nil {
		st.scheduleErr = err
		st.condition = restoreVerified(metav1.ConditionFalse, v1alpha1.ReasonBackupInvalidSchedule, err.Error()+"; no restore drill runs until it is fixed")
		st.status.NextScheduleTime = nil
		return st
	}
	base := ec.CreationTimestamp.Time
	if t := st.status.LastScheduleTime; t != nil {
		base = t.Time
	}
	next := sched.Next(base)
	running := st.status.LastScheduleTime != nil && st.status.CompletionTime == nil
	switch {
	case running:
		st.check = drilledSnapshot(snaps, st.status)
		if st.check == nil {
			st.status.CompletionTime = ptrTime(now)
			st.condition = restoreVerified(metav1.ConditionFalse, v1alpha1.ReasonRestoreDrillSnapshotGone,
				fmt.Sprintf("EtcdSnapshot %s was deleted or replaced during its restore drill", st.status.SnapshotName))
		}
	case !next.After(now):
		due := schedule.LatestDue(sched, next, now)
		next = sched.Next(due)
		st.status.LastScheduleTime, st.status.CompletionTime = ptrTime(due), nil
		st.status.SnapshotName, st.status.SnapshotUID = "", ""
		newest := etcdsnapshot.CompleteNewestFirst(snaps, ec)
		if len(newest) == 0 {
			st.status.CompletionTime = ptrTime(now)
			st.condition = restoreVerified(metav1.ConditionFalse, v1alpha1.ReasonRestoreDrillNoSnapshot,
				"the restore drill due at "+rfc3339(due)+" found no Complete EtcdSnapshot of the cluster to restore")
			break
		}
		st.check = newest[0]
		st.status.SnapshotName, st.status.SnapshotUID = st.check.Name, st.check.UID
		if meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionRestoreVerified) == nil {
			st.condition = restoreVerified(metav1.ConditionUnknown, v1alpha1.ReasonRestoreDrillRunning,
				"the first restore drill runs, on EtcdSnapshot "+st.check.Name)
		}
	}
	st.status.NextScheduleTime = ptrTime(next)
	if st.check != nil {
		st.requeue = drillPoll
	} else if wait := next.Sub(now); wait > 0 {
		st.requeue = wait
	}
	return st
}

// drilledSnapshot is the running drill's snapshot among snaps: the same
// object (UID) it chose, not being deleted; nil when gone.
func drilledSnapshot(snaps []*v1alpha1.EtcdSnapshot, st v1alpha1.RestoreDrillStatus) *v1alpha1.EtcdSnapshot {
	for _, s := range snaps {
		if s.Name == st.SnapshotName && s.UID == st.SnapshotUID && s.DeletionTimestamp == nil &&
			s.Status.Phase == v1alpha1.SnapshotComplete && s.Status.Artifact != nil {
			return s
		}
	}
	return nil
}

// observe takes the running drill's outcome out into st: once Done (or
// blocked) the drill ends and st.condition says how.
func (st *drillStep) observe(out etcdsnapshot.VerifyOutcome, now time.Time) {
	s := st.check
	switch {
	case out.InTheWay != "":
		st.status.CompletionTime = ptrTime(now)
		st.condition = restoreVerified(metav1.ConditionFalse, v1alpha1.ReasonRestoreDrillBlocked,
			fmt.Sprintf("the restore drill of EtcdSnapshot %s cannot run: %s", s.Name, out.InTheWay))
	case !out.Done:
		return
	case !out.Verified:
		st.status.CompletionTime = ptrTime(out.At)
		st.condition = restoreVerified(metav1.ConditionFalse, v1alpha1.ReasonRestoreDrillFailed,
			fmt.Sprintf("the restore drill of EtcdSnapshot %s (%s) failed: %s", s.Name, s.Status.Artifact.URI, out.Message))
	default:
		st.status.CompletionTime = ptrTime(out.At)
		st.status.Revision, st.status.Duration = out.Revision, &metav1.Duration{Duration: out.Duration}
		st.condition = restoreVerified(metav1.ConditionTrue, v1alpha1.ReasonRestoreDrillPassed,
			fmt.Sprintf("EtcdSnapshot %s (%s) restored into a throwaway etcd serving revision %d, in %s",
				s.Name, s.Status.Artifact.URI, out.Revision, out.Duration.Round(time.Millisecond)))
	}
	st.check, st.requeue = nil, 0
	if next := st.status.NextScheduleTime; next != nil {
		st.requeue = max(next.Sub(now), time.Second)
	}
}

func restoreVerified(status metav1.ConditionStatus, reason, msg string) *metav1.Condition {
	return &metav1.Condition{Type: v1alpha1.ConditionRestoreVerified, Status: status, Reason: reason, Message: msg}
}
