package dashboard

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdfleet/etcdfleet/fleet/limiter"
	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// scheduled gives the EtcdCluster a backup schedule, its last good backup
// (nil: none yet) and, unless status is empty, a BackedUp condition.
func scheduled(last *time.Time, status metav1.ConditionStatus, reason string) ecOpt {
	return func(c *etcdv1.EtcdCluster) {
		c.Spec.Backup = &etcdv1.BackupSpec{Interval: &metav1.Duration{Duration: time.Hour}}
		if last != nil {
			t := metav1.NewTime(*last)
			c.Status.Backup = &etcdv1.BackupStatus{LastSuccessfulTime: &t}
		}
		if status != "" {
			c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{Type: etcdv1.ConditionBackedUp,
				Status: status, Reason: reason, LastTransitionTime: metav1.Now()})
		}
	}
}

// backedUpAt is a scheduled EtcdCluster whose last good backup was at t.
func backedUpAt(name string, t time.Time, status metav1.ConditionStatus, reason string) etcdv1.EtcdCluster {
	return ec("etcd", name, 1, 1, avail(metav1.ConditionTrue, etcdv1.ReasonQuorumHealthy), voters(true), scheduled(&t, status, reason))
}

var _ = Describe("SummarizeBackups", func() {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

	It("takes the oldest last good backup among scheduled EtcdClusters and counts those behind and never backed up", func() {
		b := SummarizeBackups([]etcdv1.EtcdCluster{
			backedUpAt("fresh", t0, metav1.ConditionTrue, etcdv1.ReasonBackupOnSchedule),
			backedUpAt("stale", t0.Add(-6*time.Hour), metav1.ConditionFalse, etcdv1.ReasonBackupBehindSchedule),
			backedUpAt("failed", t0.Add(-time.Hour), metav1.ConditionFalse, etcdv1.ReasonBackupFailed),
			// Unscheduled: its old backup (taken by hand) is not the fleet's concern.
			ec("etcd", "manual", 1, 1, func(c *etcdv1.EtcdCluster) {
				old := metav1.NewTime(t0.Add(-72 * time.Hour))
				c.Status.Backup = &etcdv1.BackupStatus{LastSuccessfulTime: &old}
			}),
		})
		Expect([]int32{b.Scheduled, b.Behind, b.Never}).To(Equal([]int32{3, 2, 0}))
		Expect(b.OldestLastBackup.Time).To(Equal(t0.Add(-6 * time.Hour)))
		Expect(b.Summary()).To(Equal(BackupBehind))
	})

	It("says never while a scheduled EtcdCluster has no good backup, and nothing without schedules", func() {
		b := SummarizeBackups([]etcdv1.EtcdCluster{
			backedUpAt("fresh", t0, metav1.ConditionTrue, etcdv1.ReasonBackupOnSchedule),
			ec("etcd", "new", 1, 1, scheduled(nil, "", "")),
		})
		Expect([]int32{b.Scheduled, b.Behind, b.Never}).To(Equal([]int32{2, 0, 1}))
		Expect(b.OldestLastBackup.Time).To(Equal(t0), "the never backed-up one has no time to be oldest with")
		Expect(b.Summary()).To(Equal(BackupNever))
		Expect(SummarizeBackups([]etcdv1.EtcdCluster{healthy("etcd", "plain", 3)}).Summary()).To(BeEmpty())
		Expect(SummarizeBackups([]etcdv1.EtcdCluster{backedUpAt("fresh", t0, metav1.ConditionTrue, etcdv1.ReasonBackupOnSchedule)}).Summary()).
			To(Equal(BackupOK))
	})
})

var _ = Describe("Writer, backups", func() {
	It("shows each cluster's oldest last good backup and those behind schedule, and the Fleet the clusters behind", func() {
		now := time.Now().Truncate(time.Second)
		ns := testEnv.NewNamespace(context.Background(), "dashboard-test")
		src := newStubSource()
		behind := newSecret(ns, "behind")
		src.set(behind, stubEtcd{clusters: []etcdv1.EtcdCluster{
			backedUpAt("a", now.Add(-30*time.Hour), metav1.ConditionFalse, etcdv1.ReasonBackupBehindSchedule),
			backedUpAt("b", now.Add(-time.Hour), metav1.ConditionTrue, etcdv1.ReasonBackupOnSchedule),
		}})
		never := newSecret(ns, "never")
		src.set(never, stubEtcd{clusters: []etcdv1.EtcdCluster{
			ec("etcd", "new", 1, 1, avail(metav1.ConditionTrue, etcdv1.ReasonQuorumHealthy), voters(true),
				scheduled(nil, metav1.ConditionFalse, etcdv1.ReasonBackupBehindSchedule)),
		}})
		onTime := newSecret(ns, "on-time")
		src.set(onTime, stubEtcd{clusters: []etcdv1.EtcdCluster{
			backedUpAt("a", now.Add(-2*time.Hour), metav1.ConditionTrue, etcdv1.ReasonBackupOnSchedule),
		}})
		unscheduled := newSecret(ns, "unscheduled")
		src.set(unscheduled, stubEtcd{clusters: []etcdv1.EtcdCluster{healthy("etcd", "a", 3)}})
		startWriter(src, &stubLimiter{s: limiter.Stats{Rate: 2, Burst: 10}}, Options{MinInterval: 200 * time.Millisecond, Resync: time.Second})

		Eventually(func(g Gomega) {
			st := getFC(g, nnOf(behind)).Status
			g.Expect([]int32{st.EtcdClustersWithBackup, st.EtcdClustersBehindBackup, st.EtcdClustersNeverBackedUp}).To(Equal([]int32{2, 1, 0}))
			g.Expect(st.OldestLastBackupTime).NotTo(BeNil())
			g.Expect(st.OldestLastBackupTime.Time).To(BeTemporally("==", now.Add(-30*time.Hour)))
			g.Expect(st.BackupSummary).To(Equal(BackupBehind))
			g.Expect(getFC(g, nnOf(never)).Status.BackupSummary).To(Equal(BackupNever))
			g.Expect(getFC(g, nnOf(onTime)).Status.BackupSummary).To(Equal(BackupOK))
			g.Expect(getFleet(g).Status.ClustersBehindBackupSchedule).To(Equal(int32(2)), "behind and never")
			// Its row is read below too: wait for its status (CI-W read it
			// created but not yet written, at nice 10).
			g.Expect(getFC(g, nnOf(unscheduled)).Status.MembersSummary).To(Equal("3/3"))
		}, 15*time.Second).Should(Succeed())

		rows := map[string]map[string]string{}
		for _, r := range table(fleetClustersPath(ns)) {
			rows[r["Name"]] = r
		}
		Expect([]string{rows["behind"]["Backup"], rows["behind"]["OldestBackup"], rows["behind"]["BehindBackup"]}).
			To(Equal([]string{"behind", "30h", "1"}), "kubectl shows the oldest backup's age")
		Expect([]string{rows["never"]["Backup"], rows["never"]["OldestBackup"], rows["never"]["BehindBackup"]}).
			To(Equal([]string{"never", "<nil>", "1"}))
		Expect([]string{rows["unscheduled"]["Backup"], rows["unscheduled"]["BehindBackup"]}).To(Equal([]string{"<nil>", "0"}))
		Expect(table("/apis/fleet.etcdfleet.io/v1alpha1/fleets")[0]).To(HaveKeyWithValue("BehindBackup", "2"))

		By("the behind cluster catching up")
		src.set(behind, stubEtcd{clusters: []etcdv1.EtcdCluster{
			backedUpAt("a", now, metav1.ConditionTrue, etcdv1.ReasonBackupOnSchedule),
			backedUpAt("b", now.Add(-time.Hour), metav1.ConditionTrue, etcdv1.ReasonBackupOnSchedule),
		}})
		Eventually(func(g Gomega) {
			st := getFC(g, nnOf(behind)).Status
			g.Expect(st.EtcdClustersBehindBackup).To(BeZero())
			g.Expect(st.OldestLastBackupTime.Time).To(BeTemporally("==", now.Add(-time.Hour)))
			g.Expect(getFleet(g).Status.ClustersBehindBackupSchedule).To(Equal(int32(1)))
		}, 15*time.Second).Should(Succeed())
	})
})
