package kubeconfigsecret_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

// bindIn grants ns/name the ClusterRole clusterRole in namespace where only.
func bindIn(ctx context.Context, c *sandbox.Cluster, ns, name, clusterRole, where string) {
	GinkgoHelper()
	namespace(ctx, c, where)
	_, err := c.Clientset.RbacV1().RoleBindings(where).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
	}, metav1.CreateOptions{})
	Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
}

// listEtcdClustersEverywhere grants ns/name what the identity ClusterRole
// grants beyond the kube-system Namespace: list EtcdClusters in every
// namespace.
func listEtcdClustersEverywhere(ctx context.Context, c *sandbox.Cluster, ns, name string) {
	GinkgoHelper()
	role := ns + "-" + name + "-list-etcdclusters"
	_, err := c.Clientset.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"etcdclusters"}, Verbs: []string{"list"}}}},
		metav1.CreateOptions{})
	Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
	_, err = c.Clientset.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}}, metav1.CreateOptions{})
	Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
}

var _ = Describe("Namespaced registration", func() {
	It("engages credentials granted in some namespaces only, and caches those namespaces alone", func(ctx SpecContext) {
		serviceAccount(ctx, w1, "nsreg", "fleet", "")
		bindIn(ctx, w1, "nsreg", "fleet", "cluster-admin", "nsreg-a")
		bindIn(ctx, w1, "nsreg", "fleet", "cluster-admin", "nsreg-b")
		kc, err := w1.ServiceAccountKubeconfig(ctx, "nsreg", "fleet", time.Hour)
		Expect(err).NotTo(HaveOccurred())
		createEtcdCluster(ctx, w1, "nsreg-c", "outside")

		By("refusing them cluster-wide: pre-flight is Forbidden")
		register(ctx, "nsreg-w1", kc)
		Eventually(state("nsreg-w1")).WithTimeout(10 * time.Second).Should(HaveField("Reason", kubeconfigsecret.ReasonForbidden))

		By("engaging once the Secret lists the namespaces (a reconnect, like a new kubeconfig)")
		// The identity role's list of EtcdClusters, cluster-wide.
		listEtcdClustersEverywhere(ctx, w1, "nsreg", "fleet")
		putSecret(ctx, "nsreg-w1", map[string][]byte{testKey: kc}, true, map[string]string{testNSList: "nsreg-b, nsreg-a,"})
		waitConnected("nsreg-w1", 30*time.Second)

		By("showing the namespace that holds an EtcdCluster but is not granted")
		Expect(state("nsreg-w1")().UnwatchedNamespaces).To(And(ContainSubstring("nsreg-c"), Not(ContainSubstring("nsreg-a"))))
		Eventually(func(g Gomega) {
			var evs corev1.EventList
			g.Expect(mgmtC.List(ctx, &evs, client.InNamespace(secretNS))).To(Succeed())
			found := false
			for _, e := range evs.Items {
				found = found || (e.InvolvedObject.Name == "nsreg-w1" && e.Reason == kubeconfigsecret.EventNamespacesNotGranted &&
					strings.Contains(e.Message, "nsreg-c"))
			}
			g.Expect(found).To(BeTrue(), "a Warning Event names nsreg-c")
		}).WithContext(ctx).WithTimeout(10 * time.Second).Should(Succeed())
		createEtcdCluster(ctx, w1, "nsreg-a", "inside")
		Eventually(rec.saw("nsreg-w1", "nsreg-a", "inside")).WithTimeout(10 * time.Second).Should(BeTrue())

		cl, err := mgr.GetCluster(ctx, "nsreg-w1")
		Expect(err).NotTo(HaveOccurred())
		var list v1alpha1.EtcdClusterList
		Expect(cl.GetCache().List(ctx, &list)).To(Succeed())
		for _, ec := range list.Items {
			Expect(ec.Namespace).To(BeElementOf("nsreg-a", "nsreg-b"), "the cache holds %s/%s", ec.Namespace, ec.Name)
		}
		Expect(rec.saw("nsreg-w1", "nsreg-c", "outside")()).To(BeFalse())
	})
})

var _ = Describe("SplitNamespaces", func() {
	It("drops blanks and duplicates and sorts", func() {
		Expect(kubeconfigsecret.SplitNamespaces(" b,a,,b ")).To(Equal([]string{"a", "b"}))
		Expect(kubeconfigsecret.SplitNamespaces("")).To(BeEmpty())
	})
})
