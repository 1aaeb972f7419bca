package etcdcluster

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/replacement"
)

// The cluster controller's side of member replacements: it releases the
// lease the member controller took, and lifts the cluster-wide cap.
var _ = Describe("member replacement bookkeeping", func() {
	var h *harness
	ctx := context.Background()
	BeforeEach(func() { h = newHarness() })

	updateStatus := func(ec *v1alpha1.EtcdCluster, mutate func(*v1alpha1.EtcdClusterStatus)) {
		GinkgoHelper()
		cur := h.get(ec)
		mutate(&cur.Status)
		Expect(k8sClient.Status().Update(ctx, cur)).To(Succeed())
	}

	It("keeps the lease until the removed member is gone", func() {
		ec := h.newCluster(3)
		h.converge(ec, 3)
		victim := h.members()[0]
		h.setReady(&victim, false) // the member controller marks it before it takes the lease
		updateStatus(ec, func(st *v1alpha1.EtcdClusterStatus) {
			st.Replacing = &v1alpha1.ReplacementLease{Member: victim.Name, MemberUID: victim.UID,
				Action: "CrashLoopReplace", Since: metav1.NewTime(h.now)}
		})
		h.reconcile(ec)
		Expect(h.get(ec).Status.Replacing).NotTo(BeNil(), "the member still stands")

		// Its removal: the finalizer takes it out of etcd and lets go.
		m := &v1alpha1.EtcdMember{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&victim), m)).To(Succeed())
		Expect(k8sClient.Delete(ctx, m)).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&victim), m)).To(Succeed())
		Expect(h.etcd.Remove(ctx, etcdTarget(), mustID(m))).To(Succeed())
		controllerutil.RemoveFinalizer(m, v1alpha1.FinalizerMemberCleanup)
		Expect(k8sClient.Update(ctx, m)).To(Succeed())
		h.reconcile(ec)
		Expect(h.get(ec).Status.Replacing).To(BeNil(), "gone from the API means gone from etcd")
		Expect(h.events.All()).To(ContainElement(ContainSubstring("MemberRemovalDone")))
	})

	It("releases the lease of a removal abandoned because the member came back Ready", func() {
		ec := h.newCluster(3)
		h.converge(ec, 3)
		victim := h.members()[0]
		updateStatus(ec, func(st *v1alpha1.EtcdClusterStatus) {
			st.Replacing = &v1alpha1.ReplacementLease{Member: victim.Name, MemberUID: victim.UID,
				Action: "CrashLoopReplace", Since: metav1.NewTime(h.now)}
		})
		h.reconcile(ec)
		Expect(h.get(ec).Status.Replacing).To(BeNil())
	})

	It("lifts the cluster-wide cap once every member was Ready for the healthy period", func() {
		ec := h.newCluster(3)
		h.converge(ec, 3)
		updateStatus(ec, func(st *v1alpha1.EtcdClusterStatus) {
			st.Replacement = &v1alpha1.ReplacementStatus{Total: 2, CappedCount: 2, Consecutive: 2,
				WindowStart: &metav1.Time{Time: h.now}}
			apimeta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionReplacementsExhausted,
				Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonCapReached, Message: "set by the test"})
		})
		h.reconcile(ec)
		st := h.get(ec).Status
		Expect(st.Replacement.HealthySince).NotTo(BeNil())
		Expect(st.Replacement.CappedCount).To(Equal(int32(2)), "not Ready for long enough yet")

		h.now = h.now.Add(replacement.DefaultPolicy().HealthyReset)
		h.reconcile(ec)
		cur := h.get(ec)
		Expect(cur.Status.Replacement.CappedCount).To(BeZero())
		Expect(cur.Status.Replacement.Total).To(Equal(int32(2)), "the total is history")
		Expect(conditionStatus(cur, v1alpha1.ConditionReplacementsExhausted)).To(Equal(metav1.ConditionFalse))
	})
})
