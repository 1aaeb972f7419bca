package etcdcluster

import (
	"context"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/fakeetcd"
)

// After a power cycle every cluster of a fleet is leaderless at once, and
// a reconcile waiting the whole list timeout on each holds a worker that
// a revived cluster's reconcile needs (leaderlessListTimeout).
var _ = Describe("a cluster whose members' readiness shows no quorum", func() {
	It("gives etcd's MemberList a short deadline, and the usual one once a quorum is Ready again", func() {
		h := newHarness()
		ec := h.newCluster(3)
		h.converge(ec, 3)
		ms := h.members()
		listsSince := func(n int) []time.Duration {
			GinkgoHelper()
			b := h.etcd.ListBudgets()
			Expect(len(b)).To(BeNumerically(">", n), "the reconcile asked etcd for its member list")
			return b[n:]
		}

		By("two of three members not Ready, etcd without a leader")
		h.etcd.SetNoQuorum(errors.New("context deadline exceeded"))
		h.setReady(&ms[0], false)
		h.setReady(&ms[1], false)
		n := len(h.etcd.ListBudgets())
		h.reconcile(ec)
		Expect(listsSince(n)).To(HaveEach(And(BeNumerically(">", 0), BeNumerically("<=", leaderlessListTimeout))))
		Expect(conditionReason(h.get(ec), v1alpha1.ConditionAvailable)).To(Equal(v1alpha1.ReasonQuorumLost))

		By("a second member Ready again: a quorum, asked without the short deadline")
		h.etcd.SetNoQuorum(nil)
		h.setReady(&ms[1], true)
		n = len(h.etcd.ListBudgets())
		h.reconcile(ec)
		Expect(listsSince(n)).To(HaveEach(Equal(fakeetcd.NoDeadline)), "the reconcile's own context has no deadline here; Ops adds the list timeout")
		Expect(conditionReason(h.get(ec), v1alpha1.ConditionAvailable)).To(Equal(v1alpha1.ReasonQuorumAvailable))
	})

	It("gives it the short deadline too while the members still say Ready but the cache shows their Pods stopped", func() {
		h := newHarness()
		ec := h.newCluster(3)
		h.converge(ec, 3)
		ms := h.members()
		h.etcd.SetNoQuorum(errors.New("context deadline exceeded"))

		By("a node reboot: two of three Pods Succeeded before any member's Ready status is written")
		h.stoppedPod(&ms[0])
		h.stoppedPod(&ms[1])
		n := len(h.etcd.ListBudgets())
		h.reconcile(ec)
		b := h.etcd.ListBudgets()
		Expect(len(b)).To(BeNumerically(">", n), "the reconcile asked etcd for its member list")
		Expect(b[n:]).To(HaveEach(And(BeNumerically(">", 0), BeNumerically("<=", leaderlessListTimeout))))
	})
})

// stoppedPod creates m's Pod as a graceful node shutdown leaves it:
// Succeeded and not Ready.
func (h *harness) stoppedPod(m *v1alpha1.EtcdMember) {
	GinkgoHelper()
	ctx := context.Background()
	po := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: m.Status.PodName, Namespace: m.Namespace},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "etcd"}}}}
	Expect(k8sClient.Create(ctx, po)).To(Succeed())
	po.Status.Phase = corev1.PodSucceeded
	po.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	Expect(k8sClient.Status().Update(ctx, po)).To(Succeed())
}
