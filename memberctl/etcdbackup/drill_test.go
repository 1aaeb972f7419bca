package etcdbackup

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdsnapshot"
)

// drillCluster is an EtcdCluster backed up hourly with a drill every d.
func drillCluster(d time.Duration) *v1alpha1.EtcdCluster {
	spec := every(time.Hour)
	spec.Verify = &v1alpha1.RestoreDrillSpec{Interval: &metav1.Duration{Duration: d}}
	return testCluster(spec)
}

// completeSnap is a Complete snapshot of ec that completed at done.
func completeSnap(ec *v1alpha1.EtcdCluster, done time.Time) *v1alpha1.EtcdSnapshot {
	s := scheduledSnap(ec, done.Add(-3*time.Second), v1alpha1.SnapshotComplete)
	s.CreationTimestamp = metav1.NewTime(done.Add(-3 * time.Second))
	s.UID = types.UID("uid-" + s.Name)
	s.Status.Artifact.URI = "s3://b/" + s.Name + ".db"
	return s
}

// dueAfter is the first drill due time of ec after t.
func dueAfter(t *testing.T, ec *v1alpha1.EtcdCluster, after time.Time) time.Time {
	t.Helper()
	st := planDrill(ec, nil, &v1alpha1.RestoreDrillStatus{LastScheduleTime: ptrTime(after), CompletionTime: ptrTime(after)}, after)
	return st.status.NextScheduleTime.Time
}

func TestDrillWaitsForItsDueTime(t *testing.T) {
	ec := drillCluster(time.Hour)
	first := dueAfter(t, ec, t0)
	st := planDrill(ec, []*v1alpha1.EtcdSnapshot{completeSnap(ec, t0.Add(time.Minute))}, nil, first.Add(-time.Second))
	if st.check != nil || st.condition != nil {
		t.Fatalf("a drill ran before its due time: check %v, condition %+v", st.check, st.condition)
	}
	if !st.status.NextScheduleTime.Time.Equal(first) || st.requeue != time.Second {
		t.Errorf("next %v requeue %v, want %v in 1s", st.status.NextScheduleTime, st.requeue, first)
	}
}

func TestDrillRestoresTheNewestCompleteSnapshotOnce(t *testing.T) {
	ec := drillCluster(time.Hour)
	first := dueAfter(t, ec, t0)
	old, newest := completeSnap(ec, t0.Add(time.Minute)), completeSnap(ec, t0.Add(2*time.Minute))
	failed := scheduledSnap(ec, t0.Add(3*time.Minute), v1alpha1.SnapshotFailed)
	gone := completeSnap(ec, t0.Add(4*time.Minute))
	gone.DeletionTimestamp = ptrTime(t0.Add(5 * time.Minute))
	// Three due times missed (a manager that was down): one drill, at the newest.
	now := first.Add(3*time.Hour + time.Minute)
	st := planDrill(ec, []*v1alpha1.EtcdSnapshot{old, failed, newest, gone}, nil, now)
	if st.check != newest {
		t.Fatalf("drill restores %v, want the newest Complete %s", st.check, newest.Name)
	}
	if want := first.Add(3 * time.Hour); !st.status.LastScheduleTime.Time.Equal(want) {
		t.Errorf("lastScheduleTime %v, want the newest missed due time %v", st.status.LastScheduleTime, want)
	}
	if st.status.SnapshotName != newest.Name || st.status.SnapshotUID != newest.UID || st.status.CompletionTime != nil {
		t.Errorf("status %+v", st.status)
	}
	if st.condition == nil || st.condition.Status != metav1.ConditionUnknown || st.requeue != drillPoll {
		t.Errorf("first drill: condition %+v requeue %v", st.condition, st.requeue)
	}

	// While it runs, a newer snapshot and a passed due time change nothing:
	// one drill at a time, on the snapshot it chose.
	running := st.status
	newer := completeSnap(ec, now.Add(time.Minute))
	later := now.Add(2 * time.Hour)
	st = planDrill(ec, []*v1alpha1.EtcdSnapshot{old, newest, newer}, &running, later)
	if st.check != newest || !st.status.LastScheduleTime.Equal(running.LastScheduleTime) {
		t.Fatalf("running drill: check %v lastScheduleTime %v", st.check, st.status.LastScheduleTime)
	}

	// It passes: True, with the revision and the duration.
	st.observe(etcdsnapshot.VerifyOutcome{Done: true, Verified: true, At: later, Revision: 4242, Duration: 1500 * time.Millisecond}, later)
	c := st.condition
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonRestoreDrillPassed ||
		!strings.Contains(c.Message, "revision 4242") || !strings.Contains(c.Message, "1.5s") {
		t.Fatalf("passed drill: %+v", c)
	}
	if st.check != nil || st.status.Revision != 4242 || st.status.Duration.Duration != 1500*time.Millisecond ||
		!st.status.CompletionTime.Time.Equal(later) {
		t.Errorf("passed drill status %+v", st.status)
	}
}

func TestDrillFailsWhenTheRestoreFailsOrTheSnapshotGoes(t *testing.T) {
	ec := drillCluster(time.Hour)
	now := dueAfter(t, ec, t0).Add(time.Second)
	s := completeSnap(ec, t0.Add(time.Minute))
	st := planDrill(ec, []*v1alpha1.EtcdSnapshot{s}, nil, now)
	running := st.status

	st.observe(etcdsnapshot.VerifyOutcome{Done: true, At: now, Message: "BackoffLimitExceeded: open snapshot: At least one of the pre-conditions you specified did not hold"}, now)
	if c := st.condition; c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonRestoreDrillFailed ||
		!strings.Contains(c.Message, "pre-conditions") || !strings.Contains(c.Message, s.Name) {
		t.Errorf("failed drill: %+v", c)
	}
	if st.status.Revision != 0 {
		t.Errorf("a failed drill recorded revision %d", st.status.Revision)
	}

	// The snapshot replaced under its name while the drill ran.
	replaced := completeSnap(ec, t0.Add(time.Minute))
	replaced.UID = "another"
	st = planDrill(ec, []*v1alpha1.EtcdSnapshot{replaced}, &running, now.Add(time.Second))
	if c := st.condition; st.check != nil || c == nil || c.Reason != v1alpha1.ReasonRestoreDrillSnapshotGone || st.status.CompletionTime == nil {
		t.Errorf("replaced snapshot: check %v condition %+v", st.check, c)
	}

	// A Job of the drill's name that the snapshot does not own.
	st = planDrill(ec, []*v1alpha1.EtcdSnapshot{s}, &running, now)
	st.observe(etcdsnapshot.VerifyOutcome{InTheWay: "Job x-verify is in the way"}, now)
	if c := st.condition; c == nil || c.Reason != v1alpha1.ReasonRestoreDrillBlocked {
		t.Errorf("blocked drill: %+v", c)
	}

	// Not done yet: still running, polled.
	st = planDrill(ec, []*v1alpha1.EtcdSnapshot{s}, &running, now)
	st.observe(etcdsnapshot.VerifyOutcome{}, now)
	if st.check == nil || st.requeue != drillPoll || st.status.CompletionTime != nil {
		t.Errorf("running drill ended early: %+v", st)
	}
}

func TestDrillWithoutASnapshotSaysSo(t *testing.T) {
	ec := drillCluster(time.Hour)
	now := dueAfter(t, ec, t0).Add(time.Second)
	early := completeSnap(ec, t0.Add(-time.Hour)) // of an earlier cluster of the same name
	early.CreationTimestamp = metav1.NewTime(t0.Add(-2 * time.Hour))
	st := planDrill(ec, []*v1alpha1.EtcdSnapshot{early}, nil, now)
	if c := st.condition; st.check != nil || c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonRestoreDrillNoSnapshot {
		t.Errorf("no snapshot: check %v condition %+v", st.check, c)
	}
	if st.requeue <= 0 || st.requeue > time.Hour {
		t.Errorf("requeue %v, want the next due time", st.requeue)
	}
}

func TestDrillScheduleThatDoesNotParse(t *testing.T) {
	for _, cron := range []string{"CRON_TZ=UTC", "TZ=Europe/Berlin 0 3 * * *", "61 * * * *", "@every 1s"} {
		ec := drillCluster(time.Hour)
		ec.Spec.Backup.Verify = &v1alpha1.RestoreDrillSpec{Cron: cron}
		st := planDrill(ec, []*v1alpha1.EtcdSnapshot{completeSnap(ec, t0.Add(time.Minute))}, nil, t0.Add(48*time.Hour))
		c := st.condition
		if st.check != nil || st.scheduleErr == nil || c == nil || c.Reason != v1alpha1.ReasonBackupInvalidSchedule ||
			!strings.Contains(c.Message, "spec.backup.verify") {
			t.Errorf("cron %q: check %v condition %+v", cron, st.check, c)
		}
	}
}
