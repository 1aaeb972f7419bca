package etcdbackup

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdsnapshot"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testCluster(spec *v1alpha1.BackupSpec) *v1alpha1.EtcdCluster {
	ec := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "cluster-uid",
		CreationTimestamp: metav1.NewTime(t0)}}
	ec.Spec.Backup = spec
	return ec
}

func every(d time.Duration) *v1alpha1.BackupSpec {
	return &v1alpha1.BackupSpec{Interval: &metav1.Duration{Duration: d}}
}

// scheduledSnap is a scheduled snapshot of ec due at due in phase.
func scheduledSnap(ec *v1alpha1.EtcdCluster, due time.Time, phase v1alpha1.SnapshotPhase) *v1alpha1.EtcdSnapshot {
	s := &v1alpha1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: snapshotName(ec.Name, due), Namespace: ec.Namespace,
		Labels:          map[string]string{v1alpha1.LabelScheduled: "true"},
		Annotations:     map[string]string{v1alpha1.AnnotationScheduledAt: rfc3339(due)},
		OwnerReferences: []metav1.OwnerReference{{Kind: "EtcdCluster", Name: ec.Name, UID: ec.UID, Controller: ptr.To(true)}}},
		Spec: v1alpha1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: ec.Name}}}
	s.Status.Phase = phase
	if phase == v1alpha1.SnapshotComplete {
		s.Status.StartedAt, s.Status.CompletedAt = ptrTime(due.Add(time.Second)), ptrTime(due.Add(3*time.Second))
		s.Status.Artifact = &v1alpha1.SnapshotArtifact{SizeBytes: 100, Revision: due.Unix()}
	}
	return s
}

func names(snaps []*v1alpha1.EtcdSnapshot) []string {
	var out []string
	for _, s := range snaps {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}

func TestRetentionKeepsTheNewestCompleteAndNeverInFlight(t *testing.T) {
	ec := testCluster(every(time.Hour))
	at := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	running := scheduledSnap(ec, at(5), v1alpha1.SnapshotStarted)
	c4, f3 := scheduledSnap(ec, at(4), v1alpha1.SnapshotComplete), scheduledSnap(ec, at(3), v1alpha1.SnapshotFailed)
	c2, c1, c0 := scheduledSnap(ec, at(2), v1alpha1.SnapshotComplete), scheduledSnap(ec, at(1), v1alpha1.SnapshotComplete), scheduledSnap(ec, at(0), v1alpha1.SnapshotComplete)
	all := []*v1alpha1.EtcdSnapshot{running, c4, f3, c2, c1, c0}
	now := at(5)

	got := names(toPrune(all, &v1alpha1.BackupRetention{Keep: ptr.To[int32](2)}, now))
	if want := names([]*v1alpha1.EtcdSnapshot{f3, c1, c0}); !slices.Equal(got, want) {
		t.Errorf("keep 2: pruned %v, want %v", got, want)
	}
	got = names(toPrune(all, &v1alpha1.BackupRetention{MaxAge: &metav1.Duration{Duration: 90 * time.Minute}}, now))
	if want := names([]*v1alpha1.EtcdSnapshot{f3, c2, c1, c0}); !slices.Equal(got, want) {
		t.Errorf("maxAge 90m: pruned %v, want %v (the newest Complete stays however old)", got, want)
	}
	got = names(toPrune(all, &v1alpha1.BackupRetention{MaxAge: &metav1.Duration{Duration: time.Minute}}, at(100)))
	if slices.Contains(got, c4.Name) || slices.Contains(got, running.Name) {
		t.Errorf("maxAge: pruned %v, which holds the newest Complete or the running one", got)
	}
	if got := toPrune(all, nil, now); got != nil {
		t.Errorf("no retention pruned %v", names(got))
	}
	failedNewest := []*v1alpha1.EtcdSnapshot{f3, c2}
	if got := toPrune(failedNewest, &v1alpha1.BackupRetention{Keep: ptr.To[int32](1)}, now); len(got) != 0 {
		t.Errorf("pruned %v: the newest Failed one is kept for its error", names(got))
	}
}

func TestPlanStartsTheFirstRunWhenDue(t *testing.T) {
	ec := testCluster(every(10 * time.Second))
	now := t0.Add(time.Minute)
	p := makePlan(ec, nil, now, time.Hour)
	if p.create == nil || p.create.After(now) || now.Sub(*p.create) >= 10*time.Second {
		t.Fatalf("create = %v, want the latest due time before %s", p.create, now)
	}
	if p.condition.Status != metav1.ConditionTrue || p.condition.Reason != v1alpha1.ReasonBackupOnSchedule {
		t.Errorf("condition %+v, want True OnSchedule", p.condition)
	}
	if next := p.status.NextScheduleTime.Time; next.Sub(*p.create) != 10*time.Second {
		t.Errorf("next %s is not one interval after %s", next, p.create)
	}
	if p.requeue <= 0 || p.requeue > 10*time.Second {
		t.Errorf("requeue %s, want the wait for the next due time", p.requeue)
	}
}

func TestPlanNeverStartsASecondRunAndFlagsALateOne(t *testing.T) {
	ec := testCluster(every(10 * time.Second))
	due := t0.Add(time.Minute)
	running := scheduledSnap(ec, due, v1alpha1.SnapshotStarted)
	p := makePlan(ec, []*v1alpha1.EtcdSnapshot{running}, due.Add(59*time.Second), time.Minute)
	if p.create != nil {
		t.Errorf("created a run for %s while %s runs", p.create, running.Name)
	}
	if p.condition.Status != metav1.ConditionTrue || p.requeue != time.Second {
		t.Errorf("within grace: %+v requeue %s, want True and a look again when the grace ends", p.condition, p.requeue)
	}
	p = makePlan(ec, []*v1alpha1.EtcdSnapshot{running}, due.Add(time.Minute), time.Minute)
	if p.condition.Status != metav1.ConditionFalse || p.condition.Reason != v1alpha1.ReasonBackupBehindSchedule {
		t.Errorf("after grace: %+v, want False BackupBehindSchedule", p.condition)
	}
}

func TestPlanReportsAFailedRunAndStartsTheNext(t *testing.T) {
	ec := testCluster(every(10 * time.Second))
	sched, _ := parseSchedule(ec.Spec.Backup, ec.UID)
	due := sched.Next(t0.Add(time.Minute))
	failed := scheduledSnap(ec, due, v1alpha1.SnapshotFailed)
	p := makePlan(ec, []*v1alpha1.EtcdSnapshot{failed}, due.Add(5*time.Second), time.Minute)
	if p.create != nil || p.condition.Reason != v1alpha1.ReasonBackupFailed || p.condition.Status != metav1.ConditionFalse {
		t.Errorf("plan %+v, want BackupFailed and no run before the next due time", p.condition)
	}
	p = makePlan(ec, []*v1alpha1.EtcdSnapshot{failed}, due.Add(10*time.Second), time.Minute)
	if p.create == nil || p.condition.Reason != v1alpha1.ReasonBackupFailed {
		t.Errorf("next due: create %v condition %+v, want a run, still BackupFailed until it completes", p.create, p.condition)
	}
}

func TestPlanStartsOneRunForManyMissed(t *testing.T) {
	ec := testCluster(&v1alpha1.BackupSpec{Cron: "0 * * * *"})
	old := scheduledSnap(ec, t0, v1alpha1.SnapshotComplete)
	now := t0.Add(7*24*time.Hour + 30*time.Minute)
	p := makePlan(ec, []*v1alpha1.EtcdSnapshot{old}, now, time.Hour)
	if want := t0.Add(7 * 24 * time.Hour); p.create == nil || !p.create.Equal(want) {
		t.Fatalf("create = %v, want only the latest missed time %s", p.create, want)
	}
	if want := t0.Add(7*24*time.Hour + time.Hour); !p.status.NextScheduleTime.Time.Equal(want) {
		t.Errorf("next = %s, want %s", p.status.NextScheduleTime, want)
	}
}

func TestPlanInvalidCronSchedulesNothing(t *testing.T) {
	ec := testCluster(&v1alpha1.BackupSpec{Cron: "every day"})
	p := makePlan(ec, nil, t0.Add(time.Hour), time.Hour)
	if p.create != nil || p.scheduleErr == nil || p.condition.Reason != v1alpha1.ReasonBackupInvalidSchedule || p.requeue != 0 {
		t.Errorf("plan %+v", p)
	}
}

func TestLastGoodIsTheNewestCompleteScheduledOrNot(t *testing.T) {
	ec := testCluster(&v1alpha1.BackupSpec{Interval: &metav1.Duration{Duration: time.Hour}, Suspend: true})
	sched := scheduledSnap(ec, t0, v1alpha1.SnapshotComplete)
	manual := scheduledSnap(ec, t0.Add(time.Hour), v1alpha1.SnapshotComplete)
	manual.Name, manual.Labels, manual.OwnerReferences = "by-hand", nil, nil
	st := makePlan(ec, []*v1alpha1.EtcdSnapshot{sched, manual}, t0.Add(90*time.Minute), time.Hour).status
	if st.LastSnapshotName != "by-hand" || st.LastDuration.Duration != 2*time.Second || st.LastSizeBytes != 100 {
		t.Errorf("status %+v, want the hand-made snapshot", st)
	}
	if !st.LastScheduleTime.Time.Equal(t0) {
		t.Errorf("lastScheduleTime %s counts the hand-made snapshot", st.LastScheduleTime)
	}
}

// Two clusters of the same name on one fleet-wide template (same bucket
// and prefix), in other namespaces or other workload clusters (other
// UIDs), never share a scheduled snapshot's object: their names are equal
// at the same due time, so the key must tell them apart.
func TestScheduledKeysAreEachClustersOwn(t *testing.T) {
	due := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	cluster := func(ns string, uid types.UID, key string) *v1alpha1.EtcdCluster {
		return &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "main", UID: uid},
			Spec: v1alpha1.EtcdClusterSpec{Backup: &v1alpha1.BackupSpec{Location: v1alpha1.SnapshotLocation{
				S3: &v1alpha1.S3Location{Bucket: "fleet", Key: key}}}}}
	}
	keys := map[string]string{}
	for what, ec := range map[string]*v1alpha1.EtcdCluster{
		"etcd/main in w1": cluster("etcd", "uid-w1", "daily"), "etcd/main in w2": cluster("etcd", "uid-w2", "daily/"),
		"team/main in w1": cluster("team", "uid-w1b", "daily"), "etcd/main, no prefix": cluster("etcd", "uid-w3", ""),
	} {
		s := &v1alpha1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: snapshotName(ec.Name, due)},
			Spec: v1alpha1.EtcdSnapshotSpec{Location: Location(ec)}}
		key := etcdsnapshot.ObjectKey(s)
		if other, ok := keys[key]; ok {
			t.Errorf("%s and %s share the object %s", what, other, key)
		}
		keys[key] = what
		if want := ec.Namespace + "/main/" + string(ec.UID) + "/"; !strings.Contains(key, want) {
			t.Errorf("%s: key %s lacks %s", what, key, want)
		}
	}
}

func TestPlanHeldForAPauseStartsAndPrunesNothing(t *testing.T) {
	ec := testCluster(every(time.Hour))
	ec.Spec.Backup.Retention = &v1alpha1.BackupRetention{Keep: ptr.To[int32](1)}
	at := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	snaps := []*v1alpha1.EtcdSnapshot{scheduledSnap(ec, at(1), v1alpha1.SnapshotComplete), scheduledSnap(ec, at(0), v1alpha1.SnapshotComplete)}
	p := makePlan(ec, snaps, at(2).Add(time.Minute), time.Hour)
	if p.create == nil || len(p.prune) == 0 {
		t.Fatalf("the unpaused plan should start a run and prune: create %v, prune %v", p.create, names(p.prune))
	}
	cond := p.condition
	p.holdForPause()
	if p.create != nil || p.prune != nil {
		t.Errorf("paused: create %v, prune %v, want nothing", p.create, names(p.prune))
	}
	if p.requeue <= 0 || p.requeue > pausedRecheck {
		t.Errorf("paused: requeue %s, want at most %s (a pause ends with no event)", p.requeue, pausedRecheck)
	}
	if p.condition != cond {
		t.Errorf("paused: the condition changed to %+v; it still tells the schedule", p.condition)
	}
}
