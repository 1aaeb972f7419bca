package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

var _ = Describe("Reconcile", func() {
	var h *harness
	BeforeEach(func() { h = newHarness() })

	It("bootstraps exactly one seed, stamped a voter, with itself as initial cluster", func() {
		ec := h.newCluster(3)
		for i := 0; i < 4; i++ {
			h.reconcile(ec)
		}
		ms := h.members()
		Expect(ms).To(HaveLen(1))
		seed := ms[0]
		cur := h.get(ec)
		Expect(seed.Spec.Bootstrap).To(BeTrue())
		Expect(seed.Status.IsVoter).To(BeTrue())
		Expect(seed.Spec.InitialCluster).To(Equal(fmt.Sprintf("%s=http://%s.ec.%s.svc:2380", seed.Name, seed.Name, h.ns)))
		Expect(seed.Labels).To(Equal(v1alpha1.MemberLabels("ec", seed.Name)))
		Expect(metav1.IsControlledBy(&seed, cur)).To(BeTrue())
		Expect(seed.Spec.ClusterToken).To(Equal(fmt.Sprintf("%s-ec-%s", h.ns, cur.UID)))
		Expect(seed.Spec.Version).To(Equal("3.6.16"))
		Expect(cur.Status.ClusterToken).To(Equal(seed.Spec.ClusterToken))
		Expect(cur.Status.Observed.Replicas).To(Equal(int32(3)))
		Expect(cur.Status.ProgressDeadline).NotTo(BeNil())
		Expect(cur.Status.ClusterID).To(BeEmpty())
		Expect(conditionReason(cur, v1alpha1.ConditionProgressing)).To(Equal(v1alpha1.ReasonWaitingForSeed))
		Expect(conditionStatus(cur, v1alpha1.ConditionAvailable)).To(Equal(metav1.ConditionFalse))
		Expect(callsLike(h.etcd.Calls(), "AddLearner")).To(BeEmpty())
		Expect(h.events.All()).To(ContainElement(ContainSubstring("MemberCreated Created seed member " + seed.Name)))
	})

	It("latches the cluster ID only from a single-member list that is the seed", func() {
		ec := h.newCluster(1)
		h.reconcile(ec)
		h.reconcile(ec)
		seed := h.members()[0]
		h.startMember(&seed)
		// Someone else's member sits in the seed's list: not a cluster we formed.
		h.etcd.AddMember(etcdMember(0x99, "intruder", "http://intruder:2380"))
		h.reconcile(ec)
		Expect(h.get(ec).Status.ClusterID).To(BeEmpty())

		h.etcd.KeepFirst(1)
		h.reconcile(ec)
		cur := h.get(ec)
		Expect(cur.Status.ClusterID).To(Equal(fmt.Sprintf("%016x", h.etcd.ClusterID())))
		Expect(h.events.All()).To(ContainElement(ContainSubstring("ClusterIDLatched")))
	})

	It("converges, then writes nothing in steady state", func() {
		ec := h.newCluster(3)
		h.converge(ec, 3)
		before := h.get(ec)
		Expect(conditionReason(before, v1alpha1.ConditionAvailable)).To(Equal(v1alpha1.ReasonQuorumHealthy))
		Expect(before.Status.ProgressDeadline).To(BeNil())
		Expect(before.Status.Members).To(HaveLen(3))
		for _, m := range before.Status.Members {
			Expect(m.Role).To(Equal(v1alpha1.MemberRoleVoter))
			Expect(m.Ready).To(BeTrue())
			Expect(m.ID).To(HaveLen(16))
		}
		Expect(before.Status.Selector).To(Equal(v1alpha1.ClusterSelector("ec")))
		memberRV := map[string]string{}
		for _, m := range h.members() {
			memberRV[m.Name] = m.ResourceVersion
		}
		pdbBefore := &policyv1.PodDisruptionBudget{}
		Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(ec), pdbBefore)).To(Succeed())
		Expect(pdbBefore.Spec.MinAvailable.IntValue()).To(Equal(2))

		for i := 0; i < 3; i++ {
			res := h.reconcile(ec)
			Expect(res.RequeueAfter).To(Equal(requeueSteady))
		}
		after := h.get(ec)
		Expect(after.ResourceVersion).To(Equal(before.ResourceVersion), "no status write in steady state")
		for _, m := range h.members() {
			Expect(m.ResourceVersion).To(Equal(memberRV[m.Name]), "member %s was written", m.Name)
		}
		pdbAfter := &policyv1.PodDisruptionBudget{}
		Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(ec), pdbAfter)).To(Succeed())
		Expect(pdbAfter.ResourceVersion).To(Equal(pdbBefore.ResourceVersion))
	})

	It("writes the status when every etcd call fails (#367)", func() {
		ec := h.newCluster(3)
		h.converge(ec, 3)
		h.etcd.SetFail(errors.New("connection refused"))

		res := h.reconcile(ec)
		Expect(res.RequeueAfter).To(BeNumerically("<=", requeueUnreachable))
		cur := h.get(ec)
		Expect(conditionStatus(cur, v1alpha1.ConditionAvailable)).To(Equal(metav1.ConditionFalse))
		Expect(conditionReason(cur, v1alpha1.ConditionAvailable)).To(Equal(v1alpha1.ReasonClusterUnreachable))
		Expect(conditionStatus(cur, v1alpha1.ConditionDegraded)).To(Equal(metav1.ConditionTrue))
		Expect(h.events.All()).To(ContainElement(ContainSubstring("ClusterUnreachable")))

		// The Pods go down too: readyMembers must follow, not stay stale-high.
		for _, m := range h.members() {
			h.setReady(&m, false)
		}
		h.reconcile(ec)
		cur = h.get(ec)
		Expect(cur.Status.ReadyMembers).To(Equal(int32(0)))
		Expect(conditionReason(cur, v1alpha1.ConditionAvailable)).To(Equal(v1alpha1.ReasonQuorumLost))
		Expect(cur.Status.Members).To(HaveLen(3), "members are still reported")
	})

	It("scales up by adding a learner, and promotes it only once every member is Ready", func() {
		ec := h.newCluster(1)
		h.converge(ec, 1)
		seed := h.members()[0]
		h.setReplicas(ec, 2)

		h.reconcile(ec)
		ms := h.members()
		Expect(ms).To(HaveLen(2))
		joiner := ms[0]
		if joiner.Name == seed.Name {
			joiner = ms[1]
		}
		Expect(joiner.Spec.Bootstrap).To(BeFalse())
		Expect(joiner.Status.IsVoter).To(BeFalse())
		Expect(callsLike(h.etcd.Calls(), "AddLearner")).To(Equal([]string{"AddLearner " + etcd.MemberPeerURL(&joiner)}))
		want := []string{seed.Name + "=" + etcd.MemberPeerURL(&seed), joiner.Name + "=" + etcd.MemberPeerURL(&joiner)}
		if want[1] < want[0] {
			want[0], want[1] = want[1], want[0]
		}
		Expect(joiner.Spec.InitialCluster).To(Equal(want[0] + "," + want[1]))
		Expect(conditionReason(h.get(ec), v1alpha1.ConditionProgressing)).To(Equal(v1alpha1.ReasonSpecChanged))

		// The learner's Pod is not Ready yet: no promotion, no third member.
		for i := 0; i < 3; i++ {
			h.reconcile(ec)
		}
		Expect(callsLike(h.etcd.Calls(), "Promote")).To(BeEmpty())
		Expect(h.members()).To(HaveLen(2))

		// The learner is Ready but another member is not: still no promotion.
		h.startMember(&joiner)
		h.setReady(&seed, false)
		h.reconcile(ec)
		Expect(callsLike(h.etcd.Calls(), "Promote")).To(BeEmpty())

		// All Ready, but etcd still reports the fresh cluster unhealthy: retry soon.
		h.etcd.SetPromoteErrs(rpctypes.ErrUnhealthy)
		h.setReady(&seed, true)
		res := h.reconcile(ec)
		Expect(res.RequeueAfter).To(BeNumerically("<=", 5*time.Second))
		Expect(callsLike(h.etcd.Calls(), "Promote")).To(HaveLen(1))

		h.reconcile(ec)
		Expect(callsLike(h.etcd.Calls(), "Promote")).To(HaveLen(2))
		Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(&joiner), &joiner)).To(Succeed())
		Expect(joiner.Status.IsVoter).To(BeTrue())
		h.converge(ec, 2)
		Expect(h.events.All()).To(ContainElement(ContainSubstring("MemberPromoted")))
	})

	It("scales down the newest running member, one at a time", func() {
		ec := h.newCluster(3)
		h.converge(ec, 3)
		ms := h.members()
		victim := ms[len(ms)-1].Name
		h.setReplicas(ec, 1)

		res := h.reconcile(ec)
		Expect(res.RequeueAfter).To(Equal(requeueEtcd))
		for i := 0; i < 3; i++ {
			h.reconcile(ec) // the deletion is in flight: nothing else happens
		}
		deleting := 0
		for _, m := range h.members() {
			if m.DeletionTimestamp != nil {
				deleting++
				Expect(m.Name).To(Equal(victim))
			}
		}
		Expect(deleting).To(Equal(1))

		// The finalizer removes it from etcd and lets go; the next newest goes.
		m := &v1alpha1.EtcdMember{}
		Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: h.ns, Name: victim}, m)).To(Succeed())
		Expect(h.etcd.Remove(context.Background(), etcdTarget(), mustID(m))).To(Succeed())
		controllerutil.RemoveFinalizer(m, v1alpha1.FinalizerMemberCleanup)
		Expect(k8sClient.Update(context.Background(), m)).To(Succeed())
		h.reconcile(ec)
		ms = h.members()
		Expect(ms).To(HaveLen(2))
		Expect(ms[1].DeletionTimestamp).NotTo(BeNil(), "the newer of the two goes")
		Expect(ms[0].DeletionTimestamp).To(BeNil())
	})

	It("holds a scale-down that would lose quorum", func() {
		ec := h.newCluster(3)
		h.converge(ec, 3)
		ms := h.members()
		h.setReady(&ms[0], false) // an older voter is down; the newest is fine
		h.setReplicas(ec, 2)
		h.reconcile(ec)
		for _, m := range h.members() {
			Expect(m.DeletionTimestamp).To(BeNil())
		}
	})

	It("pauses the last member on 1→0 and resumes it on 0→1", func() {
		ec := h.newCluster(1)
		h.converge(ec, 1)
		h.setReplicas(ec, 0)
		h.reconcile(ec)
		m := h.members()[0]
		Expect(m.Spec.Dormant).To(BeTrue())
		h.setMemberStatus(&m, func(s *v1alpha1.EtcdMemberStatus) { s.PodName, s.PodUID = "", "" })
		h.setReady(&m, false)
		h.reconcile(ec)
		cur := h.get(ec)
		Expect(conditionReason(cur, v1alpha1.ConditionAvailable)).To(Equal(v1alpha1.ReasonPaused))
		Expect(conditionReason(cur, v1alpha1.ConditionProgressing)).To(Equal(v1alpha1.ReasonPaused))
		Expect(cur.Status.Replicas).To(Equal(int32(1)))

		h.setReplicas(ec, 1)
		h.reconcile(ec)
		Expect(h.members()[0].Spec.Dormant).To(BeFalse())
		Expect(h.members()).To(HaveLen(1))
	})

	It("stops stepping once the progress deadline passes, until the deadline is removed", func() {
		ec := h.newCluster(1)
		h.converge(ec, 1)
		h.setReplicas(ec, 2)
		h.reconcile(ec) // the learner is added and never becomes Ready
		h.now = h.now.Add(11 * time.Minute)
		h.reconcile(ec)
		cur := h.get(ec)
		Expect(conditionReason(cur, v1alpha1.ConditionProgressing)).To(Equal(v1alpha1.ReasonDeadlineExceeded))
		Expect(conditionReason(cur, v1alpha1.ConditionAvailable)).To(Equal(v1alpha1.ReasonDeadlineExceeded))
		Expect(h.events.All()).To(ContainElement(ContainSubstring("Warning DeadlineExceeded")))

		cur.Status.ProgressDeadline = nil
		Expect(k8sClient.Status().Update(context.Background(), cur)).To(Succeed())
		h.reconcile(ec)
		cur = h.get(ec)
		Expect(conditionReason(cur, v1alpha1.ConditionProgressing)).To(Equal(v1alpha1.ReasonRetryAfterDeadline))
		Expect(cur.Status.ProgressDeadline).NotTo(BeNil())
	})

	It("never creates a second seed when the cache lags its own writes", func() {
		ec := h.newCluster(3)
		h.lag() // the cache has seen no member at all
		for i := 0; i < 4; i++ {
			h.reconcile(ec)
		}
		Expect(h.members()).To(HaveLen(1))
	})

	It("never scales down from a cache that misses the newest member", func() {
		ec := h.newCluster(3)
		h.converge(ec, 3)
		old := h.members()
		h.setReplicas(ec, 4)
		h.reconcile(ec) // creates the 4th member and adds it as a learner
		Expect(h.members()).To(HaveLen(4))

		// Abort the step (remove the deadline) and shrink to 2, while the
		// cache still shows only the 3 old members.
		cur := h.get(ec)
		cur.Status.ProgressDeadline = nil
		Expect(k8sClient.Status().Update(context.Background(), cur)).To(Succeed())
		h.setReplicas(ec, 2)
		h.lag().stale.Items = old
		h.reconcile(ec)
		Expect(h.get(ec).Status.Observed.Replicas).To(Equal(int32(2)))
		for _, m := range h.members() {
			Expect(m.DeletionTimestamp).To(BeNil(), "%s was deleted on a stale view", m.Name)
		}
	})

	It("forgets the etcd client of a deleted cluster", func() {
		ec := h.newCluster(1)
		h.reconcile(ec)
		Expect(k8sClient.Delete(context.Background(), ec)).To(Succeed())
		h.reconcile(ec)
		Expect(h.etcd.Forgotten()).To(ContainElement(etcd.TargetKey("", h.ns, "ec")))
	})
})
