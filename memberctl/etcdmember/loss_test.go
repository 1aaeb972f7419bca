package etcdmember

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

// A node that never comes back leaves its Pods terminating for good: only
// its kubelet would finish the delete. The harness plays that with a
// finalizer of its own on the Pod.
var _ = Describe("node-loss replacement", func() {
	const stuck = "test.etcdfleet.io/node-gone"
	// strand deletes the member's Pod as the taint manager would, and
	// returns when the Pod's deletion deadline passed.
	strand := func(h *harness, name string) time.Time {
		GinkgoHelper()
		ctx := context.Background()
		p := h.pod(name)
		controllerutil.AddFinalizer(p, stuck)
		Expect(k8sClient.Update(ctx, p)).To(Succeed())
		Expect(k8sClient.Delete(ctx, p)).To(Succeed())
		DeferCleanup(func() {
			p := h.pod(name)
			if p != nil && controllerutil.RemoveFinalizer(p, stuck) {
				Expect(client.IgnoreNotFound(k8sClient.Update(ctx, p))).To(Succeed())
			}
		})
		p = h.pod(name)
		Expect(p.DeletionTimestamp).NotTo(BeNil())
		return p.DeletionTimestamp.Time
	}
	setTimeout := func(h *harness, d *metav1.Duration) {
		GinkgoHelper()
		ec := h.cluster()
		ec.Spec.Recovery = &v1alpha1.RecoverySpec{NodeLossTimeout: d}
		Expect(k8sClient.Update(context.Background(), ec)).To(Succeed())
	}

	It("replaces a memory member whose Pod its node never finishes, once the default timeout has passed and while quorum holds without it", func() {
		h := newHarness(v1alpha1.StorageMediumMemory, 3)
		deadline := strand(h, "ec-0")

		By("within the timeout: waiting, and coming back when it ends")
		h.now = deadline.Add(4 * time.Minute)
		res := h.reconcile("ec-0")
		Expect(h.removing("ec-0")).To(BeFalse())
		Expect(res.RequeueAfter).To(BeNumerically("<=", time.Minute), "requeued for the end of the timeout")
		Expect(h.gate.requests).To(BeEmpty())

		By("past it, with another voter down: quorum would not hold without it")
		h.now = deadline.Add(v1alpha1.DefaultMemoryNodeLossTimeout + time.Second)
		h.etcd.SetDown("ec-1", true)
		h.reconcile("ec-0")
		Expect(h.removing("ec-0")).To(BeFalse())
		Expect(readyMessage(h.member("ec-0"))).To(ContainSubstring("terminating since"))

		By("past it, with the others up: replaced through the gate")
		h.etcd.SetDown("ec-1", false)
		h.reconcile("ec-0")
		Expect(h.removing("ec-0")).To(BeTrue())
		Expect(h.gate.requests).To(HaveLen(1))
		Expect(h.gate.requests[0].Action).To(Equal(gate.NodeLossReplace))
		Expect(h.events.with("ReplacingNodeLostMember")).To(HaveLen(1), "one Event")
	})

	It("leaves a PVC member waiting for its node unless a timeout is set, and replaces it past that one", func() {
		h := newHarness("", 3)
		deadline := strand(h, "ec-0")
		h.now = deadline.Add(24 * time.Hour)
		h.reconcile("ec-0")
		Expect(h.removing("ec-0")).To(BeFalse(), "off by default: a node-local claim comes back with its node")

		setTimeout(h, &metav1.Duration{Duration: time.Minute})
		h.reconcile("ec-0")
		Expect(h.removing("ec-0")).To(BeTrue())
	})

	It("is off for a memory member with a zero timeout", func() {
		h := newHarness(v1alpha1.StorageMediumMemory, 3)
		setTimeout(h, &metav1.Duration{})
		h.now = strand(h, "ec-0").Add(time.Hour)
		h.reconcile("ec-0")
		Expect(h.removing("ec-0")).To(BeFalse())
	})
})

// A PVC member's claim is its data: one that ran and lost its claim is
// replaced by a new member, never started under its old ID on a new,
// empty claim.
var _ = Describe("claim-loss replacement", func() {
	loseClaim := func(h *harness, name string) {
		GinkgoHelper()
		ctx := context.Background()
		claim := h.member(name).Status.PVCName
		Expect(claim).NotTo(BeEmpty())
		h.losePod(name)
		Expect(k8sClient.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: claim}})).To(Succeed())
	}
	noClaim := func(h *harness, name string) {
		GinkgoHelper()
		c := &corev1.PersistentVolumeClaim{}
		err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: h.ns, Name: "data-" + name}, c)
		// envtest has no pvc-protection controller: the deleted claim stays,
		// terminating; a new one would have no deletion timestamp.
		Expect(apierrors.IsNotFound(err) || c.DeletionTimestamp != nil).To(BeTrue(), "no new, empty claim under the old member ID: %v", err)
	}

	It("removes a member that lost its claim, through the gate, without recreating the claim", func() {
		h := newHarness("", 3)
		loseClaim(h, "ec-0")
		h.reconcile("ec-0")
		Expect(h.removing("ec-0")).To(BeTrue())
		Expect(h.gate.requests).To(HaveLen(1))
		Expect(h.gate.requests[0].Action).To(Equal(gate.PodLossReplace))
		Expect(h.events.with("PVCMemberLost")).To(HaveLen(1))
		noClaim(h, "ec-0")
		Expect(h.pod("ec-0")).To(BeNil())
	})

	It("neither removes nor restarts it while quorum depends on it", func() {
		h := newHarness("", 3)
		loseClaim(h, "ec-0")
		h.etcd.SetDown("ec-1", true)
		h.reconcile("ec-0")
		Expect(h.removing("ec-0")).To(BeFalse())
		noClaim(h, "ec-0")
		Expect(h.pod("ec-0")).To(BeNil())
	})
})
