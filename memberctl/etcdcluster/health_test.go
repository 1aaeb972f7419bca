package etcdcluster

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/test/fakeetcd"
)

// etcd's own health: what the members' Status calls report, paced, and
// written only when it changed.
var _ = Describe("health", func() {
	var h *harness
	BeforeEach(func() { h = newHarness() })

	// report makes every member answer with st, and member leader as leader.
	report := func(st etcd.Status, leader string) {
		GinkgoHelper()
		for _, m := range h.members() {
			s := st
			s.Leader = mustID(h.memberNamed(leader))
			h.etcd.SetHealth(m.Name, s)
		}
	}

	It("shows alarms, the database against its quota and leader changes, and writes nothing while nothing changed", func() {
		ec := h.newCluster(3)
		h.converge(ec, 3)
		names := []string{}
		for _, m := range h.members() {
			names = append(names, m.Name)
		}
		quota := int64(100 << 20)
		report(etcd.Status{DBSize: 50<<20 + 12345, DBSizeInUse: 20 << 20, QuotaBytes: quota, RaftAppliedIndex: 100}, names[0])
		h.now = h.now.Add(healthEvery)
		h.reconcile(ec)
		cur := h.get(ec)
		Expect(cur.Status.Health).NotTo(BeNil())
		Expect(cur.Status.Health.Leader).To(Equal(names[0]))
		// The fake's own leader may have been seen before, by converge.
		changes := cur.Status.Health.LeaderChanges
		Expect(cur.Status.Health.DBSizeBytes).To(Equal(int64(50<<20)), "whole MiB")
		Expect(cur.Status.Health.QuotaUsedPercent).To(Equal(int32(50)))
		Expect(conditionStatus(cur, v1alpha1.ConditionNearQuota)).To(Equal(metav1.ConditionFalse))
		Expect(conditionStatus(cur, v1alpha1.ConditionAlarmActive)).To(Equal(metav1.ConditionFalse))

		By("a few bytes more and the same leader: no write")
		report(etcd.Status{DBSize: 50<<20 + 99999, DBSizeInUse: 20 << 20, QuotaBytes: quota, RaftAppliedIndex: 200}, names[0])
		h.now = h.now.Add(healthEvery)
		h.reconcile(ec)
		Expect(h.get(ec).ResourceVersion).To(Equal(cur.ResourceVersion))

		By("near the quota, a NOSPACE alarm, a new leader and a lagging member")
		alarm := []etcd.Alarm{{Type: "NOSPACE", MemberID: mustID(h.memberNamed(names[1]))}}
		report(etcd.Status{DBSize: 90 << 20, DBSizeInUse: 85 << 20, QuotaBytes: quota, RaftAppliedIndex: 9000, Alarms: alarm}, names[2])
		lag := etcd.Status{DBSize: 90 << 20, QuotaBytes: quota, RaftAppliedIndex: 9000 - laggingEntries - 1, Alarms: alarm}
		lag.Leader = mustID(h.memberNamed(names[2]))
		h.etcd.SetHealth(names[1], lag)
		h.now = h.now.Add(healthEvery)
		h.reconcile(ec)
		cur = h.get(ec)
		Expect(cur.Status.Health.Leader).To(Equal(names[2]))
		Expect(cur.Status.Health.LeaderChanges).To(Equal(changes + 1))
		Expect(cur.Status.Health.Alarms).To(Equal([]string{"NOSPACE on " + names[1]}))
		Expect(cur.Status.Health.LaggingMembers).To(Equal([]string{names[1]}))
		Expect(conditionReason(cur, v1alpha1.ConditionAlarmActive)).To(Equal(v1alpha1.ReasonAlarmNoSpace))
		Expect(conditionReason(cur, v1alpha1.ConditionNearQuota)).To(Equal(v1alpha1.ReasonDatabaseNearQuota))

		By("an hour later the leader change is no longer counted")
		h.now = h.now.Add(time.Hour)
		h.reconcile(ec)
		Expect(h.get(ec).Status.Health.LeaderChanges).To(BeZero())
	})

	It("measures the quota share from the exact database size, not the MiB shown", func() {
		ec := h.newCluster(1)
		h.converge(ec, 1)
		name := h.members()[0].Name
		// 3.9 MiB of a 4 MiB quota: etcd raises NOSPACE at the next write.
		report(etcd.Status{DBSize: 4<<20 - 100<<10, QuotaBytes: 4 << 20}, name)
		h.now = h.now.Add(healthEvery)
		h.reconcile(ec)
		cur := h.get(ec)
		Expect(cur.Status.Health.DBSizeBytes).To(Equal(int64(3<<20)), "whole MiB")
		Expect(cur.Status.Health.QuotaUsedPercent).To(Equal(int32(97)))
		Expect(conditionReason(cur, v1alpha1.ConditionNearQuota)).To(Equal(v1alpha1.ReasonDatabaseNearQuota))
	})

	It("asks each member at most once per interval", func() {
		ec := h.newCluster(3)
		h.converge(ec, 3)
		m := h.members()[0].Name
		h.now = h.now.Add(healthEvery)
		h.reconcile(ec)
		asked := h.etcd.StatusAsked(m)
		for range 5 {
			h.reconcile(ec)
		}
		Expect(h.etcd.StatusAsked(m)).To(Equal(asked))
		h.now = h.now.Add(healthEvery)
		h.reconcile(ec)
		Expect(h.etcd.StatusAsked(m)).To(Equal(asked + 1))
	})

	It("asks at the pace Options.HealthEvery sets", func() {
		h.r.Options.HealthEvery = time.Second
		ec := h.newCluster(3)
		h.converge(ec, 3)
		m := h.members()[0].Name
		h.now = h.now.Add(time.Second)
		h.reconcile(ec)
		asked := h.etcd.StatusAsked(m)
		h.now = h.now.Add(time.Second)
		h.reconcile(ec)
		Expect(h.etcd.StatusAsked(m)).To(Equal(asked+1), "a second later, not healthEvery later")
	})
})

// memberNamed returns the member called name.
func (h *harness) memberNamed(name string) *v1alpha1.EtcdMember {
	GinkgoHelper()
	for _, m := range h.members() {
		if m.Name == name {
			return &m
		}
	}
	Fail("no member " + name)
	return nil
}

// After a power cycle the first health look comes as soon as etcd answers
// again, while the last members are still being replaced: a member that is
// down must not hold the status write that reports the cluster Available
// for the whole status timeout.
var _ = Describe("the health look with a member not Ready", func() {
	It("gives that member's Status a short deadline, and the Ready ones the usual one", func() {
		h := newHarness()
		ec := h.newCluster(3)
		h.converge(ec, 3)
		ms := h.members()
		h.setReady(&ms[2], false)
		before := map[string]int{}
		for _, m := range ms {
			before[m.Name] = len(h.etcd.StatusBudgets(m.Name))
		}
		h.now = h.now.Add(healthEvery)
		h.reconcile(ec)
		asked := func(name string) []time.Duration {
			GinkgoHelper()
			b := h.etcd.StatusBudgets(name)
			Expect(len(b)).To(BeNumerically(">", before[name]), "the health look asked %s", name)
			return b[before[name]:]
		}
		Expect(asked(ms[2].Name)).To(HaveEach(And(BeNumerically(">", 0), BeNumerically("<=", unreadyStatusTimeout))))
		for _, m := range ms[:2] {
			Expect(asked(m.Name)).To(HaveEach(Equal(fakeetcd.NoDeadline)), "the reconcile's own context has no deadline here; Ops adds the status timeout")
		}
	})
})
