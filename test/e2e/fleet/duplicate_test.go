package fleet_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
)

func duplicateSpecs() {
	It("refuses a second Secret for an engaged cluster, shows it on its FleetCluster, and engages it once the first is gone", func(ctx SpecContext) {
		baseline(ctx)
		const w, dup = "w1", "w1-again"
		DeferCleanup(func(ctx context.Context) {
			deleteSecret(ctx, dup)
			Eventually(func() bool { _, ok := fm.Provider.State(dup); return ok }).WithContext(ctx).
				WithTimeout(30 * time.Second).Should(BeFalse())
			putSecret(ctx, w, kubeconfigData(goodKubeconfig[w]))
			waitConnected(ctx, time.Minute, w)
		})
		ns := &corev1.Namespace{}
		Expect(wc[w].Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, ns)).To(Succeed())

		By("registering w1's kubeconfig again under another name")
		since := time.Now()
		putSecret(ctx, dup, kubeconfigData(goodKubeconfig[w]))
		c := expectRow(ctx, dup, fleetv1.ConditionReady, metav1.ConditionFalse, fleetv1.ReasonDuplicateCluster)
		GinkgoWriter.Printf("FleetCluster %s: Ready=False %s %q\n", dup, c.Reason, c.Message)
		Expect(c.Message).To(ContainSubstring("Secret " + secretNS + "/" + w))
		expectRow(ctx, dup, fleetv1.ConditionConnected, metav1.ConditionFalse, kubeconfigsecret.ReasonDuplicateCluster)
		fc, err := row(ctx, dup)
		Expect(err).NotTo(HaveOccurred())
		Expect(fc.Status.ClusterID).To(Equal(string(ns.UID)), "the identity is the kube-system Namespace's UID")
		Eventually(func(g Gomega) {
			first, err := row(ctx, w)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(first.Status.ClusterID).To(Equal(string(ns.UID)))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		expectEvent(ctx, dup, corev1.EventTypeWarning, kubeconfigsecret.EventDuplicateCluster)
		for _, e := range states.since(w, since) {
			Expect(e.Connected).To(BeTrue(), "the first registration stays engaged: %+v", e)
		}

		By("deleting the first Secret: the second one engages")
		deleteSecret(ctx, w)
		expectRow(ctx, dup, fleetv1.ConditionConnected, metav1.ConditionTrue)
		waitConnected(ctx, time.Minute, dup)
	}, SpecTimeout(4*time.Minute))
}

// expectEvent waits for an Event of type and reason on the registration
// Secret name.
func expectEvent(ctx context.Context, name, typ, reason string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		var evs corev1.EventList
		g.Expect(mgmtC.List(ctx, &evs, client.InNamespace(secretNS))).To(Succeed())
		found := false
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "Secret" && e.InvolvedObject.Name == name && e.Type == typ && e.Reason == reason {
				found = true
			}
		}
		g.Expect(found).To(BeTrue(), "no %s Event %s on Secret %s", typ, reason, name)
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
}
