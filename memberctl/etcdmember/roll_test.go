package etcdmember

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

// A member whose spec.version the cluster reconciler changed is restarted
// at it: the running Pod is deleted through the shared gate (VersionRoll)
// and recreated at the new image; a PVC member keeps its ID, a memory
// member is removed for a new one.
var _ = Describe("version roll", func() {
	ctx := context.Background()
	setVersion := func(h *harness, name, v string) {
		GinkgoHelper()
		m := h.member(name)
		patch := client.MergeFrom(m.DeepCopy())
		m.Spec.Version = v
		Expect(k8sClient.Patch(ctx, m, patch)).To(Succeed())
	}
	image := func(p *corev1.Pod) string {
		GinkgoHelper()
		Expect(p).NotTo(BeNil())
		return etcdImage(p)
	}
	lastAction := func(h *harness) gate.Action {
		GinkgoHelper()
		h.gate.mu.Lock()
		defer h.gate.mu.Unlock()
		Expect(h.gate.requests).NotTo(BeEmpty())
		return h.gate.requests[len(h.gate.requests)-1].Action
	}

	It("restarts a PVC member's Pod at the new version on the same claim, with the same member ID", func() {
		h := newHarness("", 3)
		id := h.member("ec-1").Status.MemberID
		old := h.pod("ec-1")
		Expect(image(old)).To(HaveSuffix(":v3.6.16"))

		setVersion(h, "ec-1", "3.7.3")
		h.reconcile("ec-1")
		Expect(lastAction(h)).To(Equal(gate.VersionRoll), "a roll asks the shared gate as a planned action")
		Expect(h.events.with("RollingPod")).To(HaveLen(1))
		Eventually(func() types.UID {
			if p := h.pod("ec-1"); p != nil {
				return p.UID
			}
			return ""
		}).ShouldNot(Equal(old.UID))

		h.now = h.now.Add(time.Minute) // past the replacement backoff
		h.etcd.SetVersion("ec-1", "3.7.3")
		h.reconcile("ec-1") // creates the Pod at the new image
		Expect(image(h.pod("ec-1"))).To(HaveSuffix(":v3.7.3"))
		h.setPod("ec-1", running(true, 0))
		h.reconcile("ec-1")
		m := h.member("ec-1")
		Expect(m.Status.MemberID).To(Equal(id), "a PVC member keeps its ID")
		Expect(m.Status.Version).To(Equal("3.7.3"))
		Expect(isReady(m)).To(BeTrue())
		Expect(h.removing("ec-1")).To(BeFalse())
	})

	It("removes a memory member so that a new member at the new version replaces it", func() {
		h := newHarness(v1alpha1.StorageMediumMemory, 3)
		setVersion(h, "ec-2", "3.7.3")
		h.reconcile("ec-2")
		Expect(lastAction(h)).To(Equal(gate.VersionRoll))
		Expect(h.removing("ec-2")).To(BeTrue(), "its data is in its Pod only: a new member with a new ID replaces it")
		Expect(h.cluster().Status.Replacing).NotTo(BeNil(), "one removal per etcd cluster at a time, as every replacement")
	})

	It("refuses a spec.version etcd does not allow from what the member runs: the Pod stays, with a Warning and the reason", func() {
		h := newHarness("", 3)
		old := h.pod("ec-1").UID
		setVersion(h, "ec-1", "3.4.0") // not something the cluster reconciler would ask for
		h.reconcile("ec-1")
		h.reconcile("ec-1")
		Expect(h.pod("ec-1").UID).To(Equal(old))
		h.gate.mu.Lock()
		Expect(h.gate.requests).To(BeEmpty(), "the gate is not even asked")
		h.gate.mu.Unlock()
		Expect(h.events.with(v1alpha1.ConditionUpgradeBlocked)).To(HaveLen(1), "one Warning per refused change")
		c := meta.FindStatusCondition(h.member("ec-1").Status.Conditions, v1alpha1.ConditionVersionDrifted)
		Expect(c).NotTo(BeNil())
		Expect(c.Reason).To(Equal(v1alpha1.ReasonUpgradePathRefused))
		Expect(c.Message).To(ContainSubstring("not rolled: etcdfleet does not run etcd 3.4.0"))
		Expect(isReady(h.member("ec-1"))).To(BeTrue(), "the member keeps running as it is")
	})

	It("does not roll while the other voters would not keep quorum, nor while paused, nor before the gate grants", func() {
		h := newHarness("", 3)
		old := h.pod("ec-0").UID
		setVersion(h, "ec-0", "3.7.3")

		By("another voter down: quorum would rest on the member being rolled")
		h.etcd.SetDown("ec-1", true)
		h.reconcile("ec-0")
		Expect(h.pod("ec-0").UID).To(Equal(old))
		Expect(readyMessage(h.member("ec-0"))).To(ContainSubstring("not replacing it"))
		h.etcd.SetDown("ec-1", false)

		By("paused")
		cl, err := h.r.Clusters.Cluster(ctx, h.ns)
		Expect(err).NotTo(HaveOccurred())
		cl.Paused = func() bool { return true }
		h.reconcile("ec-0")
		Expect(h.pod("ec-0").UID).To(Equal(old))
		cl.Paused = nil

		By("the gate makes it wait")
		h.gate.delay = 1
		h.reconcile("ec-0")
		Expect(h.pod("ec-0").UID).To(Equal(old))
		Expect(readyMessage(h.member("ec-0"))).To(ContainSubstring("rate limiter"))

		h.reconcile("ec-0")
		Eventually(func() *corev1.Pod { return h.pod("ec-0") }).Should(Or(BeNil(), WithTransform(func(p *corev1.Pod) types.UID { return p.UID }, Not(Equal(old)))))
	})
})
