package fleet_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
)

func rightsSpecs() {
	It("shows RBAC removed after engagement within one probe interval, keeps the cluster engaged, and shows the rights' return", func(ctx SpecContext) {
		baseline(ctx)
		const w, sa = "w2", "fleet-rights"
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreAlreadyExists(wc[w].Create(ctx, clusterAdminBinding(sa)))).To(Succeed())
			putSecret(ctx, w, kubeconfigData(goodKubeconfig[w]))
			waitConnected(ctx, time.Minute, w)
		})
		ensureServiceAccount(ctx, w, sa, true)
		kc, err := sb.Cluster(w).ServiceAccountKubeconfig(ctx, credsNS, sa, time.Hour)
		Expect(err).NotTo(HaveOccurred())
		token, err := clientcmd.RESTConfigFromKubeConfig(kc)
		Expect(err).NotTo(HaveOccurred())
		putSecret(ctx, w, kubeconfigData(kc))
		Eventually(func() string {
			cl, err := fm.Manager.GetCluster(ctx, multicluster.ClusterName(w))
			if err != nil {
				return ""
			}
			return cl.GetConfig().BearerToken
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Equal(token.BearerToken), "w2 engaged with the ServiceAccount's token")
		waitConnected(ctx, time.Minute, w)
		expectRow(ctx, w, fleetv1.ConditionAuthorized, metav1.ConditionTrue, fleetv1.ReasonRightsGranted)

		By("removing the ServiceAccount's ClusterRoleBinding")
		cfg := managerConfig()
		removedAt := time.Now()
		Expect(wc[w].Delete(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa + "-cluster-admin"}})).To(Succeed())
		var shownAt time.Time
		Eventually(func() string {
			st, _ := fm.Provider.State(w)
			shownAt = time.Now()
			return st.MissingRights
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(20 * time.Millisecond).Should(ContainSubstring("pods"))
		// The bound: one probe interval, plus the access check's own
		// time, which ProbeTimeout bounds.
		took := shownAt.Sub(removedAt)
		AddReportEntry("missing rights shown after", took.Round(10*time.Millisecond).String())
		Expect(took).To(BeNumerically("<=", cfg.Clusters.ProbeInterval+cfg.Clusters.ProbeTimeout))
		c := expectRow(ctx, w, fleetv1.ConditionAuthorized, metav1.ConditionFalse, fleetv1.ReasonMissingRights)
		GinkgoWriter.Printf("FleetCluster %s: Authorized=False %q\n", w, c.Message)
		Expect(c.Message).To(And(ContainSubstring("create"), ContainSubstring("delete"), ContainSubstring("pods")))
		expectRow(ctx, w, fleetv1.ConditionReady, metav1.ConditionFalse, fleetv1.ReasonMissingRights)
		expectRow(ctx, w, fleetv1.ConditionConnected, metav1.ConditionTrue)
		Expect(rightsMissing(w)).To(BeNumerically(">", 0))
		expectEvent(ctx, w, corev1.EventTypeWarning, kubeconfigsecret.EventMissingRights)
		st, _ := fm.Provider.State(w)
		Expect(st.Connected).To(BeTrue(), "a cluster missing rights stays engaged")

		By("restoring the binding: the rights show as granted again")
		Expect(wc[w].Create(ctx, clusterAdminBinding(sa))).To(Succeed())
		expectRow(ctx, w, fleetv1.ConditionAuthorized, metav1.ConditionTrue, fleetv1.ReasonRightsGranted)
		Expect(rightsMissing(w)).To(BeZero())
	}, SpecTimeout(4*time.Minute))
}

// rightsMissing reads the provider's missing-rights gauge of cluster w.
func rightsMissing(w string) float64 {
	GinkgoHelper()
	m := series(kubeconfigsecret.MetricRightsMissing, map[string]string{"namespace": secretNS, "cluster": w})
	Expect(m).NotTo(BeNil(), "no %s series for %s", kubeconfigsecret.MetricRightsMissing, w)
	return m.GetGauge().GetValue()
}
