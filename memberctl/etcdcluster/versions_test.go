package etcdcluster

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// What the members run, against spec.version. The harness plays the member
// controller, which reads each member's version from etcd into
// status.version; here the tests set it.
var _ = Describe("versions", func() {
	var h *harness
	ctx := context.Background()
	BeforeEach(func() { h = newHarness() })

	// report sets status.version of the members, oldest first.
	report := func(versions ...string) {
		GinkgoHelper()
		ms := h.members()
		Expect(ms).To(HaveLen(len(versions)))
		for i := range ms {
			h.setMemberStatus(&ms[i], func(s *v1alpha1.EtcdMemberStatus) { s.Version = versions[i] })
		}
	}
	condition := func(ec *v1alpha1.EtcdCluster, t string) metav1.Condition {
		GinkgoHelper()
		c := apimeta.FindStatusCondition(h.get(ec).Status.Conditions, t)
		Expect(c).NotTo(BeNil(), "no %s condition", t)
		return *c
	}
	setSpec := func(ec *v1alpha1.EtcdCluster, version string, replicas int32) {
		GinkgoHelper()
		cur := h.get(ec)
		cur.Spec.Version, cur.Spec.Replicas = version, ptr.To(replicas)
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
	}
	resourceVersions := func() map[string]string {
		out := map[string]string{}
		for _, m := range h.members() {
			out[m.Name] = m.ResourceVersion
		}
		return out
	}

	It("reports the versions the members run, not spec.version, and VersionDrifted while they differ", func() {
		ec := h.newCluster(3)
		h.converge(ec, 3)
		Expect(h.get(ec).Status.Versions).To(BeEmpty())
		Expect(condition(ec, v1alpha1.ConditionVersionDrifted).Status).To(Equal(metav1.ConditionUnknown))

		report("3.6.16", "3.6.14", "3.6.16")
		h.reconcile(ec)
		cur := h.get(ec)
		Expect(cur.Status.Versions).To(Equal([]v1alpha1.EtcdClusterVersionCount{{Version: "3.6.14", Members: 1}, {Version: "3.6.16", Members: 2}}))
		drifted := condition(ec, v1alpha1.ConditionVersionDrifted)
		Expect(drifted.Status).To(Equal(metav1.ConditionTrue))
		Expect(drifted.Message).To(Equal("members run etcd 3.6.14 (1), 3.6.16 (2); spec.version is 3.6.16"))
		Expect(conditionStatus(cur, v1alpha1.ConditionUpgradeBlocked)).To(Equal(metav1.ConditionFalse), "3.6.14 → 3.6.16 is a patch change")
		Expect(condition(ec, v1alpha1.ConditionProgressing).Message).To(Equal("3 member(s), all ready, running etcd 3.6.14 (1), 3.6.16 (2)"))

		report("3.6.16", "3.6.16", "3.6.16")
		h.reconcile(ec)
		Expect(h.get(ec).Status.Versions).To(Equal([]v1alpha1.EtcdClusterVersionCount{{Version: "3.6.16", Members: 3}}))
		Expect(condition(ec, v1alpha1.ConditionVersionDrifted).Status).To(Equal(metav1.ConditionFalse))

		By("a new spec.version is reported as not running")
		setSpec(ec, "3.7.3", 3)
		h.reconcile(ec)
		Expect(h.get(ec).Status.Versions).To(Equal([]v1alpha1.EtcdClusterVersionCount{{Version: "3.6.16", Members: 3}}))
		drifted = condition(ec, v1alpha1.ConditionVersionDrifted)
		Expect(drifted.Status).To(Equal(metav1.ConditionTrue))
		Expect(drifted.Message).To(Equal("members run etcd 3.6.16; spec.version is 3.7.3"))
		Expect(condition(ec, v1alpha1.ConditionProgressing).Message).To(Equal(
			"the spec changed: moving to 3 ready member(s) of etcd 3.7.3, rolled one at a time from etcd 3.6.16"))
		h.reconcile(ec)
		Expect(condition(ec, v1alpha1.ConditionProgressing).Message).To(HavePrefix(
			"0/3 members on etcd 3.7.3; waiting for member "), "the roll (roll_test.go) says where it stands, not that the cluster is reconciled")
	})

	It("blocks a change etcd refuses: UpgradeBlocked with one Event, no member touched, new members at the running version", func() {
		ec := h.newCluster(3)
		h.converge(ec, 3)
		// The cluster runs 3.6.5, admitted before the floor rose to 3.6.14:
		// etcd requires 3.6.11 before 3.7.
		report("3.6.5", "3.6.5", "3.6.5")
		h.reconcile(ec)
		Expect(conditionStatus(h.get(ec), v1alpha1.ConditionUpgradeBlocked)).To(Equal(metav1.ConditionFalse), "3.6.5 → 3.6.16 is a patch change")
		before := resourceVersions()

		setSpec(ec, "3.7.3", 4)
		h.reconcile(ec)
		blocked := condition(ec, v1alpha1.ConditionUpgradeBlocked)
		Expect(blocked.Status).To(Equal(metav1.ConditionTrue))
		Expect(blocked.Reason).To(Equal(v1alpha1.ReasonUpgradePathRefused))
		Expect(blocked.Message).To(And(ContainSubstring("etcd 3.6.5 → 3.7.3"), ContainSubstring("upgrade to 3.6.11 or later first"),
			ContainSubstring("new members get etcd 3.6.5")))
		h.reconcile(ec)
		Expect(callsLike(h.events.All(), "Warning "+v1alpha1.ConditionUpgradeBlocked)).To(HaveLen(1), "one Event per refused change")

		By("the members that run are not touched; the new one keeps 3.6.5")
		ms := h.members()
		Expect(ms).To(HaveLen(4))
		for _, m := range ms {
			if rv, ok := before[m.Name]; ok {
				Expect(m.ResourceVersion).To(Equal(rv), "member %s was written", m.Name)
			} else {
				Expect(m.Spec.Version).To(Equal("3.6.5"), "a new member during a refused change")
			}
		}
	})

	It("clears UpgradeBlocked once the change is one etcd allows, and new members get spec.version again", func() {
		ec := h.newCluster(3)
		h.converge(ec, 3)
		report("3.6.5", "3.6.5", "3.6.5")
		setSpec(ec, "3.7.3", 3)
		h.reconcile(ec)
		Expect(conditionStatus(h.get(ec), v1alpha1.ConditionUpgradeBlocked)).To(Equal(metav1.ConditionTrue))

		// The members were moved to 3.6.16 (the step the refusal names).
		report("3.6.16", "3.6.16", "3.6.16")
		h.reconcile(ec)
		blocked := condition(ec, v1alpha1.ConditionUpgradeBlocked)
		Expect(blocked.Status).To(Equal(metav1.ConditionFalse))
		Expect(blocked.Reason).To(Equal(v1alpha1.ReasonUpgradePathAllowed))
		Expect(blocked.Message).To(ContainSubstring("the members are rolled to it one at a time"))

		before := resourceVersions()
		setSpec(ec, "3.7.3", 4)
		for i := 0; i < 10; i++ { // grow to 4; the roll then starts, which the harness does not play
			h.reconcile(ec)
			for _, m := range h.members() {
				if m.Spec.InitialCluster != "" && m.Status.PodName == "" {
					h.startMember(&m)
				}
			}
		}
		Expect(h.members()).To(HaveLen(4))
		for _, m := range h.members() {
			if _, old := before[m.Name]; !old {
				Expect(m.Spec.Version).To(Equal("3.7.3"), "a new member once the change is allowed")
			}
		}
		Expect(condition(ec, v1alpha1.ConditionVersionDrifted).Message).To(Equal(
			"members run etcd 3.6.16; spec.version is 3.7.3; 1 member(s) have not reported theirs yet"))
	})
})

var _ = DescribeTable("observeVersions and versionVerdicts",
	func(spec string, reported []string, forNew string, drifted, blocked metav1.ConditionStatus) {
		var running []*v1alpha1.EtcdMember
		for _, v := range reported {
			running = append(running, &v1alpha1.EtcdMember{Status: v1alpha1.EtcdMemberStatus{Version: v}})
		}
		s := observeVersions(running, spec, false)
		Expect(s.forNewMembers(spec)).To(Equal(forNew))
		d, b := versionVerdicts(s)
		Expect(d.status).To(Equal(drifted), d.message)
		Expect(b.status).To(Equal(blocked), b.message)
	},
	Entry("nothing reported yet", "3.7.3", []string{"", ""}, "3.7.3", metav1.ConditionUnknown, metav1.ConditionUnknown),
	Entry("all at spec", "3.7.3", []string{"3.7.3", "3.7.3", ""}, "3.7.3", metav1.ConditionFalse, metav1.ConditionFalse),
	Entry("a dropped release at spec is no change", "3.6.5", []string{"3.6.5"}, "3.6.5", metav1.ConditionFalse, metav1.ConditionFalse),
	Entry("an allowed minor upgrade", "3.7.3", []string{"3.6.16", "3.6.14"}, "3.7.3", metav1.ConditionTrue, metav1.ConditionFalse),
	Entry("a minor downgrade from 3.6 on is rolled through etcd's downgrade API: new members take 3.6", "3.6.16", []string{"3.7.3", "3.7.1"}, "3.6.16",
		metav1.ConditionTrue, metav1.ConditionFalse),
	Entry("a patch downgrade is no minor downgrade", "3.6.14", []string{"3.6.16"}, "3.6.14", metav1.ConditionTrue, metav1.ConditionFalse),
	Entry("one member below 3.6.11 blocks, and new members take the newest 3.6 that runs", "3.7.3",
		[]string{"3.6.5", "3.6.16", "3.6.16"}, "3.6.16", metav1.ConditionTrue, metav1.ConditionTrue),
	Entry("a version etcd never released blocks, with nothing to keep", "3.6.16", []string{"3.6.16-dev"}, "3.6.16",
		metav1.ConditionTrue, metav1.ConditionTrue),
)

var _ = It("refuses a minor downgrade of a memory-backed cluster, saying why, and keeps the running version for new members", func() {
	running := []*v1alpha1.EtcdMember{{Status: v1alpha1.EtcdMemberStatus{Version: "3.7.3"}}, {Status: v1alpha1.EtcdMemberStatus{Version: "3.7.3"}}}
	s := observeVersions(running, "3.6.16", true)
	Expect(s.forNewMembers("3.6.16")).To(Equal("3.7.3"))
	_, b := versionVerdicts(s)
	Expect(b.status).To(Equal(metav1.ConditionTrue))
	Expect(b.message).To(ContainSubstring("a memory-backed cluster cannot go down a minor version"))
	By("a patch change and an upgrade are rolled as for a PVC cluster")
	for _, spec := range []string{"3.7.1", "3.7.3"} {
		_, b = versionVerdicts(observeVersions(running, spec, true))
		Expect(b.status).To(Equal(metav1.ConditionFalse), spec)
	}
})
