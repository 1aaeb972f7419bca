package kubeconfigsecret_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
)

var _ = Describe("Rights", func() {
	It("re-checks an engaged cluster's access at once when a request of its clients is answered 403, and keeps it engaged", func(ctx SpecContext) {
		const ns, sa, name = "rights-403", "fleet", "rights-w1"
		serviceAccount(ctx, w1, ns, sa, "cluster-admin")
		kc, err := w1.ServiceAccountKubeconfig(ctx, ns, sa, time.Hour)
		Expect(err).NotTo(HaveOccurred())
		register(ctx, name, kc)
		DeferCleanup(func(ctx context.Context) { deleteSecret(ctx, name) })
		cctx := waitConnected(name, 30*time.Second)
		engagedAt := time.Now()
		Expect(state(name)().MissingRights).To(BeEmpty())

		By("removing the ServiceAccount's binding and reading through the cluster's client")
		Expect(w1.Clientset.RbacV1().ClusterRoleBindings().Delete(ctx, ns+"-"+sa, metav1.DeleteOptions{})).To(Succeed())
		cl, err := mgr.GetCluster(ctx, name)
		Expect(err).NotTo(HaveOccurred())
		// Each poll makes a request, answered 403 once the authorizer has
		// seen the binding go; the periodic re-check is a minute away
		// (DefaultAccessRecheckInterval), so only the 403 can show it.
		Eventually(func() string {
			_ = cl.GetAPIReader().List(ctx, &corev1.PodList{})
			return state(name)().MissingRights
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).
			Should(ContainSubstring("create,delete,patch pods"))
		Expect(time.Since(engagedAt)).To(BeNumerically("<", kubeconfigsecret.DefaultAccessRecheckInterval),
			"shown before the first periodic re-check could run")
		Expect(connected(name)()).To(BeTrue())
		Expect(cctx.Err()).NotTo(HaveOccurred(), "a cluster missing rights stays engaged")
	})
})
