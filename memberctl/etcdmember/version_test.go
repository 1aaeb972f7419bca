package etcdmember

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/fakeetcd"
)

// The version a member runs is read from etcd again for each new Pod: a
// member recreated on another etcd version must not keep reporting the
// old one.
var _ = Describe("the running version", func() {
	It("is read again from the new Pod's etcd after the Pod is replaced", func() {
		h := newHarness("", 3)
		Expect(h.member("ec-0").Status.Version).To(Equal("3.6.16"))
		h.etcd.SetVersion("ec-0", "3.7.3")
		h.setPod("ec-0", failed("Terminated"))
		h.reconcile("ec-0") // deletes the terminal Pod
		Eventually(func() *corev1.Pod { return h.pod("ec-0") }).Should(BeNil())
		h.now = h.now.Add(time.Minute) // past the replacement backoff
		h.reconcile("ec-0")            // creates the new Pod
		h.setPod("ec-0", running(true, 0))
		h.reconcile("ec-0")
		m := h.member("ec-0")
		Expect(m.Status.Version).To(Equal("3.7.3"))
		Expect(meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.ConditionVersionDrifted)).To(BeTrue())
	})

	It("does not hold a new Pod's Ready on the version read, and reads it again soon", func() {
		h := newHarness("", 3)
		h.setPod("ec-0", failed("Terminated"))
		h.reconcile("ec-0") // deletes the terminal Pod
		Eventually(func() *corev1.Pod { return h.pod("ec-0") }).Should(BeNil())
		h.now = h.now.Add(time.Minute) // past the replacement backoff
		h.reconcile("ec-0")            // creates the new Pod
		h.etcd.SetDown("ec-0", true)   // its etcd does not answer Status yet
		h.setPod("ec-0", running(true, 0))
		asked := len(h.etcd.StatusBudgets("ec-0"))
		res := h.reconcile("ec-0")
		m := h.member("ec-0")
		Expect(isReady(m)).To(BeTrue(), "Ready is written without the version")
		Expect(m.Status.Version).To(BeEmpty())
		budgets := h.etcd.StatusBudgets("ec-0")[asked:]
		Expect(budgets).To(HaveLen(1))
		Expect(budgets[0]).To(And(BeNumerically(">", 0), BeNumerically("<=", versionOnReady)), "the read on the way to Ready is bounded")
		Expect(res.RequeueAfter).To(BeNumerically("<=", versionRetry), "and tried again soon")

		h.etcd.SetDown("ec-0", false)
		h.reconcile("ec-0")
		Expect(h.member("ec-0").Status.Version).To(Equal("3.6.16"))
		budgets = h.etcd.StatusBudgets("ec-0")[asked:]
		last := budgets[len(budgets)-1]
		Expect(last == fakeetcd.NoDeadline || last > versionOnReady).To(BeTrue(),
			"once Ready is written, the read has the whole deadline (Ops' own), got %v", last)
	})
})
