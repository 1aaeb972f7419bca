package etcdmember

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component/pod"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

// A member the cluster reconciler re-templated (resources, options, ...)
// is restarted on its new template: the Pod, whose template hash is that
// of the old spec, is deleted through the shared gate (TemplateRoll) and
// recreated from the new spec; a PVC member keeps its ID.
var _ = Describe("template roll", func() {
	ctx := context.Background()
	retemplate := func(h *harness, name string) {
		GinkgoHelper()
		m := h.member(name)
		patch := client.MergeFrom(m.DeepCopy())
		m.Spec.Options = &v1alpha1.EtcdOptions{QuotaBackendBytes: ptr.To(int64(4 << 30))}
		m.Spec.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}
		Expect(k8sClient.Patch(ctx, m, patch)).To(Succeed())
	}
	flags := func(p *corev1.Pod) []string {
		GinkgoHelper()
		Expect(p).NotTo(BeNil())
		return p.Spec.Containers[0].Command
	}

	It("restarts a PVC member's Pod on its new template on the same claim, with the same member ID", func() {
		h := newHarness("", 3)
		m := h.member("ec-1")
		id, old := m.Status.MemberID, h.pod("ec-1")
		Expect(old.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationTemplateHash, pod.TemplateHash(&m.Spec)))
		Expect(m.Status.TemplateHash).To(Equal(pod.TemplateHash(&m.Spec)), "status says which template the Pod runs")

		retemplate(h, "ec-1")
		h.reconcile("ec-1")
		h.gate.mu.Lock()
		Expect(h.gate.requests).NotTo(BeEmpty())
		Expect(h.gate.requests[len(h.gate.requests)-1].Action).To(Equal(gate.TemplateRoll), "a planned action of the shared gate")
		h.gate.mu.Unlock()
		Expect(gate.TemplateRoll.Planned()).To(BeTrue(), "served after every heal")
		Expect(h.events.with("RollingPod")).To(HaveLen(1))
		Eventually(func() types.UID {
			if p := h.pod("ec-1"); p != nil {
				return p.UID
			}
			return ""
		}).ShouldNot(Equal(old.UID))

		h.now = h.now.Add(time.Minute) // past the replacement backoff
		h.reconcile("ec-1")            // creates the Pod from the new spec
		p := h.pod("ec-1")
		Expect(flags(p)).To(ContainElement("--quota-backend-bytes=4294967296"))
		Expect(p.Spec.Containers[0].Resources.Requests.Memory().String()).To(Equal("256Mi"))
		m = h.member("ec-1")
		Expect(p.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationTemplateHash, pod.TemplateHash(&m.Spec)))
		h.setPod("ec-1", running(true, 0))
		h.reconcile("ec-1")
		m = h.member("ec-1")
		Expect(m.Status.MemberID).To(Equal(id), "a PVC member keeps its ID")
		Expect(m.Status.TemplateHash).To(Equal(pod.TemplateHash(&m.Spec)))
		Expect(isReady(m)).To(BeTrue())
		h.reconcile("ec-1")
		Expect(h.pod("ec-1").UID).To(Equal(p.UID), "a Pod on its template is left alone")
	})

	It("takes a Pod from before template hashes as running its member's spec, and rolls it when re-templated", func() {
		h := newHarness("", 3)
		old := h.pod("ec-0")
		patch := client.MergeFrom(old.DeepCopy())
		delete(old.Annotations, v1alpha1.AnnotationTemplateHash)
		Expect(k8sClient.Patch(ctx, old, patch)).To(Succeed())
		sm := h.member("ec-0")
		spatch := client.MergeFrom(sm.DeepCopy())
		sm.Status.TemplateHash = ""
		Expect(k8sClient.Status().Patch(ctx, sm, spatch)).To(Succeed())

		h.reconcile("ec-0")
		m := h.member("ec-0")
		Expect(m.Status.TemplateHash).To(Equal(pod.TemplateHash(&m.Spec)), "recorded when first seen")
		Expect(h.pod("ec-0").UID).To(Equal(old.UID), "not rolled")

		retemplate(h, "ec-0")
		h.reconcile("ec-0")
		Expect(h.member("ec-0").Status.TemplateHash).NotTo(Equal(pod.TemplateHash(&h.member("ec-0").Spec)), "the Pod still runs the old one")
		Expect(h.events.with("RollingPod")).To(HaveLen(1))
	})
})
