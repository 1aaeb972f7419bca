package sandbox_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

// The real node lifecycle and taint eviction controllers against the
// simulated kubelet: Leases keep Nodes Ready, a lost beat is repaired, and
// a power loss longer than a Pod's tolerationSeconds evicts it.
var _ = Describe("node lifecycle", Ordered, func() {
	const ns = "nodelifecycle"
	var s1 *sandbox.Cluster
	BeforeAll(func(ctx SpecContext) {
		s1 = fleet.Cluster("s1")
		_, err := s1.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	})

	// A bare Pod the kubelet schedules; the apiserver's
	// DefaultTolerationSeconds gives it 300 s tolerations, which the
	// kubelet caps at scheduling.
	runPod := func(ctx SpecContext, name string) *corev1.Pod {
		GinkgoHelper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}
		_, err := s1.Clientset.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			p, err = s1.Clientset.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Spec.NodeName).NotTo(BeEmpty())
			g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
		}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		return p
	}

	It("renews each Node's Lease, and writes back a Ready Node and Pod the controller marked down", func(ctx SpecContext) {
		p := runPod(ctx, "beat")
		for _, t := range p.Spec.Tolerations {
			if t.Effect == corev1.TaintEffectNoExecute {
				Expect(*t.TolerationSeconds).To(BeEquivalentTo(10), "capped from 300: %+v", t)
			}
		}
		leases := s1.Clientset.CoordinationV1().Leases(corev1.NamespaceNodeLease)
		l, err := leases.Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			now, err := leases.Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(now.Spec.RenewTime.After(l.Spec.RenewTime.Time)).To(BeTrue())
		}).WithTimeout(10 * time.Second).Should(Succeed())

		By("marking the Node Unknown and the Pod NotReady, as the controller does")
		node, err := s1.Clientset.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		node.Status.Conditions[0].Status = corev1.ConditionUnknown
		_, err = s1.Clientset.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		for i, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				p.Status.Conditions[i].Status = corev1.ConditionFalse
			}
		}
		_, err = s1.Clientset.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			node, err := s1.Clientset.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(node.Status.Conditions[0].Status).To(Equal(corev1.ConditionTrue))
			p, err := s1.Clientset.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(podReady(p)).To(BeTrue())
		}).WithTimeout(10 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	}, SpecTimeout(time.Minute))

	It("evicts the Pods of a Node powered off past their tolerationSeconds, and the Node's boot finishes the delete", func(ctx SpecContext) {
		p := runPod(ctx, "evicted")
		// Powered off past the grace period, the 10 s toleration and a margin.
		outage := sandbox.NodeMonitorGracePeriod + 25*time.Second
		Expect(s1.Kubelet.PowerLoss(ctx, p.Spec.NodeName, outage)).To(Succeed())
		off := time.Now()

		By("the controller marks the Node unreachable and the Pod NotReady, then evicts it")
		Eventually(func(g Gomega) {
			node, err := s1.Clientset.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(node.Spec.Taints).To(ContainElement(HaveField("Key", corev1.TaintNodeUnreachable)))
			now, err := s1.Clientset.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(podReady(now)).To(BeFalse())
			g.Expect(now.DeletionTimestamp).NotTo(BeNil(), "not evicted yet")
			g.Expect(now.Status.Conditions).To(ContainElement(HaveField("Reason", "DeletionByTaintManager")))
		}).WithTimeout(outage - 3*time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		Expect(time.Since(off)).To(BeNumerically(">", sandbox.NodeMonitorGracePeriod), "not before the grace period")

		By("the Pod stays until the Node boots and its kubelet finishes the delete")
		Expect(time.Since(off)).To(BeNumerically("<", outage))
		Eventually(func() bool {
			_, err := s1.Clientset.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(outage + 20*time.Second).WithPolling(500 * time.Millisecond).Should(BeTrue())
		Expect(time.Since(off)).To(BeNumerically(">=", outage))
		Eventually(func(g Gomega) {
			node, err := s1.Clientset.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(node.Status.Conditions[0].Status).To(Equal(corev1.ConditionTrue))
			g.Expect(node.Spec.Taints).To(BeEmpty())
		}).WithTimeout(20 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	}, SpecTimeout(2*time.Minute))
})

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
