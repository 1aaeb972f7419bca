package ctl_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/etcdfleet/etcdfleet/config"
	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/app"
	"github.com/etcdfleet/etcdfleet/fleet/ctl"
	"github.com/etcdfleet/etcdfleet/memberctl/operator"
	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
)

func registerWith(ctx context.Context, o ctl.RegisterOptions) (string, error) {
	var out bytes.Buffer
	o.Management, o.Namespace, o.Out = fleet.Cluster("mgmt").Config, ns, &out
	if o.Workload == nil {
		o.Workload = fleet.Cluster("w1").Config
	}
	err := ctl.Register(ctx, o)
	return out.String(), err
}

// registrationSecrets lists the Secrets register bound name's tokens to.
func registrationSecrets(ctx context.Context, name string) []corev1.Secret {
	list, err := fleet.Cluster("w1").Clientset.CoreV1().Secrets(ctl.WorkloadNamespace).List(ctx,
		metav1.ListOptions{LabelSelector: ctl.RegistrationOfLabel + "=" + name})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return list.Items
}

// rejected reports whether cfg's credentials are refused (401).
func rejected(ctx context.Context, cfg *rest.Config) func() bool {
	return func() bool {
		cs, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		_, err = cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{Limit: 1})
		return apierrors.IsUnauthorized(err)
	}
}

func annotations(ctx context.Context, name string) map[string]string {
	s, err := fleet.Cluster("mgmt").Clientset.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return s.Annotations
}

// engagesWithIdentity checks that cfg passes the manager's pre-flight for a
// registration watching namespaces, duplicate detection on: its Identify
// reads the kube-system Namespace, and its access checks are all allowed,
// asked as the provider asks them.
func engagesWithIdentity(ctx context.Context, cfg *rest.Config, namespaces ...string) {
	GinkgoHelper()
	id, err := kubeconfigsecret.KubeSystemUID(ctx, cfg)
	Expect(err).NotTo(HaveOccurred(), "the identity is readable")
	kubeSystem, err := fleet.Cluster("w1").Clientset.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(id).To(Equal(string(kubeSystem.UID)))
	cs := providerClientset(cfg)
	denied, err := kubeconfigsecret.CheckAccess(ctx, cs.AuthorizationV1().SelfSubjectAccessReviews(),
		app.AccessChecks(operator.PortForward), namespaces)
	Expect(err).NotTo(HaveOccurred())
	Expect(denied).To(BeEmpty(), "pre-flight's access checks")
	_, err = cs.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
	Expect(apierrors.IsForbidden(err)).To(BeTrue(), "no other Namespace is readable: %v", err)
}

// providerClientset is a clientset of cfg with the provider's default rate
// limits: client-go's 5 QPS would take seconds over the dozens of reviews
// of one CheckAccess.
func providerClientset(cfg *rest.Config) *kubernetes.Clientset {
	GinkgoHelper()
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = kubeconfigsecret.DefaultQPS, kubeconfigsecret.DefaultBurst
	cs, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	return cs
}

// The apiserver caches token authentications for 10s, so a revoked token
// is refused within that, hence the 30s bounds below.
var _ = Describe("register's credentials", Ordered, func() {
	It("records the expiry the apiserver granted and binds the token to a registration Secret", func(ctx SpecContext) {
		before := time.Now()
		_, err := registerWith(ctx, ctl.RegisterOptions{Name: "cred", TokenDuration: 2 * time.Hour, ClusterWide: true})
		Expect(err).NotTo(HaveOccurred())
		exp, err := time.Parse(time.RFC3339, annotations(ctx, "cred")[fleetv1.TokenExpiresAtAnnotation])
		Expect(err).NotTo(HaveOccurred())
		Expect(exp).To(BeTemporally("~", before.Add(2*time.Hour), time.Minute))
		Expect(registrationSecrets(ctx, "cred")).To(HaveLen(1))
		Expect(can(ctx, registered(ctx, "cred"), "list", "", "pods", "", "")).To(BeTrue())
		_, err = fleet.Cluster("w1").Clientset.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, ctl.PodsPolicy, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "register installs the admission policy")
	}, SpecTimeout(time.Minute))

	It("revokes the previous token when run again", func(ctx SpecContext) {
		old := registered(ctx, "cred")
		oldSecret := registrationSecrets(ctx, "cred")[0].Name
		out, err := registerWith(ctx, ctl.RegisterOptions{Name: "cred", ClusterWide: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring("revoked the previous token"))
		Expect(registrationSecrets(ctx, "cred")).To(ConsistOf(Not(HaveField("Name", oldSecret))))
		Eventually(rejected(ctx, old)).WithTimeout(30 * time.Second).Should(BeTrue())
		Expect(rejected(ctx, registered(ctx, "cred"))()).To(BeFalse())
		exp, err := time.Parse(time.RFC3339, annotations(ctx, "cred")[fleetv1.TokenExpiresAtAnnotation])
		Expect(err).NotTo(HaveOccurred())
		Expect(exp).To(BeTemporally("~", time.Now().Add(ctl.DefaultTokenDuration), time.Minute), "the default lifetime")
	}, SpecTimeout(time.Minute))

	It("honours a certificate-authority file and refuses a kubeconfig without a CA", func(ctx SpecContext) {
		w1 := fleet.Cluster("w1").Config
		caFile := filepath.Join(GinkgoT().TempDir(), "ca.crt")
		Expect(os.WriteFile(caFile, w1.CAData, 0o600)).To(Succeed())
		fromFile := rest.CopyConfig(w1)
		fromFile.CAData, fromFile.CAFile = nil, caFile
		// The same name as the other specs: w1 is registered once (a
		// second name would be refused as a duplicate).
		_, err := registerWith(ctx, ctl.RegisterOptions{Name: "cred", Workload: fromFile, ClusterWide: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(registered(ctx, "cred").CAData).To(Equal(w1.CAData))
		Expect(rejected(ctx, registered(ctx, "cred"))()).To(BeFalse(), "the registered kubeconfig verifies the server")

		noCA := rest.CopyConfig(w1)
		noCA.CAData = nil
		_, err = registerWith(ctx, ctl.RegisterOptions{Name: "noca", Workload: noCA, ClusterWide: true})
		Expect(err).To(MatchError(ContainSubstring("names no CA")))
		insecure := rest.CopyConfig(noCA)
		insecure.Insecure = true
		_, err = registerWith(ctx, ctl.RegisterOptions{Name: "noca", Workload: insecure, ClusterWide: true})
		Expect(err).To(MatchError(ContainSubstring("insecure-skip-tls-verify")))
		_, err = fleet.Cluster("mgmt").Clientset.CoreV1().Secrets(ns).Get(ctx, "noca", metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing registered")
	}, SpecTimeout(time.Minute))

	It("grants only the watched namespaces in namespaced mode, and switches back", func(ctx SpecContext) {
		w1 := fleet.Cluster("w1")
		for _, n := range []string{"team-a", "team-b"} {
			_, err := w1.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
			if !apierrors.IsAlreadyExists(err) {
				Expect(err).NotTo(HaveOccurred())
			}
		}
		_, err := registerWith(ctx, ctl.RegisterOptions{Name: "cred", WatchNamespaces: []string{"missing"}})
		Expect(err).To(MatchError(ContainSubstring(`watched namespace "missing" does not exist`)))

		_, err = registerWith(ctx, ctl.RegisterOptions{Name: "cred", WatchNamespaces: []string{"team-a", " team-a"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(annotations(ctx, "cred")).To(HaveKeyWithValue(fleetv1.WatchNamespacesAnnotation, "team-a"))
		cfg := registered(ctx, "cred")
		Expect(can(ctx, cfg, "list", "", "pods", "", "team-a")).To(BeTrue())
		Expect(can(ctx, cfg, "get", "", "secrets", "", "team-a")).To(BeTrue())
		Expect(can(ctx, cfg, "list", "", "pods", "", "team-b")).To(BeFalse())
		Expect(can(ctx, cfg, "get", "", "secrets", "", "team-b")).To(BeFalse())
		Expect(can(ctx, cfg, "list", "", "pods", "", "")).To(BeFalse(), "nothing cluster-wide")
		engagesWithIdentity(ctx, cfg, "team-a")
		By("without the identity binding, pre-flight reports the one cluster-wide permission missing")
		Expect(w1.Clientset.RbacV1().ClusterRoleBindings().Delete(ctx, ctl.WorkloadIdentityRole, metav1.DeleteOptions{})).To(Succeed())
		// RBAC's authorizer sees the deletion through its informers, within
		// moments; 10s is ample.
		ssar := providerClientset(cfg).AuthorizationV1().SelfSubjectAccessReviews()
		Eventually(func() []string {
			denied, err := kubeconfigsecret.CheckAccess(ctx, ssar,
				app.AccessChecks(operator.PortForward), []string{"team-a", "team-b"})
			Expect(err).NotTo(HaveOccurred())
			return denied
		}).WithTimeout(10*time.Second).Should(And(ContainElement("get namespaces named kube-system"),
			Not(ContainElement(ContainSubstring("kube-system in namespace")))), "asked once, cluster-wide")
		_, err = kubeconfigsecret.KubeSystemUID(ctx, cfg)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the identity is unreadable: %v", err)

		_, err = registerWith(ctx, ctl.RegisterOptions{Name: "cred", ClusterWide: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(annotations(ctx, "cred")).NotTo(HaveKey(fleetv1.WatchNamespacesAnnotation))
		_, err = w1.Clientset.RbacV1().RoleBindings("team-a").Get(ctx, ctl.WorkloadClusterRole, metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the namespaced grant is gone")
		Expect(can(ctx, registered(ctx, "cred"), "list", "", "pods", "", "team-b")).To(BeTrue())
		engagesWithIdentity(ctx, registered(ctx, "cred"))
		// Three registrations and two engagements: a fresh-clone CI at load
		// 25 spent 51 s before the identity step, so the timeout, which is
		// there to end a hang and not to time the commands, leaves room.
	}, SpecTimeout(3*time.Minute))

	It("names mirrors in the admission policy", func(ctx SpecContext) {
		variable := func(name string) string {
			p, err := fleet.Cluster("w1").Clientset.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, ctl.PodsPolicy, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			for _, v := range p.Spec.Variables {
				if v.Name == name {
					return v.Expression
				}
			}
			return ""
		}
		allowed := func() string { return variable("allowedImages") }
		etcdImages := "['" + strings.Join(config.EtcdImages(), "', '") + "']"
		_, err := registerWith(ctx, ctl.RegisterOptions{Name: "cred", AllowedImages: []string{"registry.example.com:5000/etcd", "registry.example.com/etcdfleet"}, ClusterWide: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(allowed()).To(Equal("['registry.example.com:5000/etcd', 'registry.example.com/etcdfleet']"))
		Expect(variable("etcdImages")).To(Equal(etcdImages), "etcd stays admitted by supported version only")
		_, err = registerWith(ctx, ctl.RegisterOptions{Name: "cred", AllowedImages: []string{"evil' || true || '"}, ClusterWide: true})
		Expect(err).To(MatchError(ContainSubstring("is not an image repository")))
		// etcd's own repositories would admit every tag, old ones with a
		// shell included.
		for _, repo := range config.EtcdImageRepositories {
			_, err = registerWith(ctx, ctl.RegisterOptions{Name: "cred", AllowedImages: []string{"registry.example.com/etcdfleet", repo}, ClusterWide: true})
			Expect(err).To(MatchError(ContainSubstring(repo + " would admit every tag of etcd")))
		}
		_, err = registerWith(ctx, ctl.RegisterOptions{Name: "cred", ClusterWide: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(allowed()).To(Equal("['ghcr.io/etcdfleet/etcdfleet-manager']"), "the default again")
		Expect(variable("etcdImages")).To(Equal(etcdImages))
	}, SpecTimeout(time.Minute))

	It("unregister revokes the token", func(ctx SpecContext) {
		const name = "cred"
		cfg := registered(ctx, name)
		var out bytes.Buffer
		Expect(ctl.Unregister(ctx, ctl.UnregisterOptions{Name: name, Management: fleet.Cluster("mgmt").Config, Namespace: ns,
			Workload: fleet.Cluster("w1").Config, Out: &out})).To(Succeed())
		Expect(out.String()).To(ContainSubstring("revoked the token"))
		Expect(registrationSecrets(ctx, name)).To(BeEmpty())
		Eventually(rejected(ctx, cfg)).WithTimeout(30 * time.Second).Should(BeTrue())
		_, err := fleet.Cluster("w1").Clientset.CoreV1().ServiceAccounts(ctl.WorkloadNamespace).Get(ctx, ctl.WorkloadSA, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "without RemoveRBAC the ServiceAccount stays")
	}, SpecTimeout(2*time.Minute))

	It("unregister fails when it finds no token to revoke on the workload cluster it is given", func(ctx SpecContext) {
		const name = "cred"
		_, err := registerWith(ctx, ctl.RegisterOptions{Name: name, ClusterWide: true})
		Expect(err).NotTo(HaveOccurred())
		var out bytes.Buffer
		// The management cluster holds no token of "cred": it is on w1.
		err = ctl.Unregister(ctx, ctl.UnregisterOptions{Name: name, Management: fleet.Cluster("mgmt").Config, Namespace: ns,
			Workload: fleet.Cluster("mgmt").Config, RemoveRBAC: true, Out: &out})
		Expect(err).To(MatchError(And(ContainSubstring("found no token of cred"), ContainSubstring("stays valid"))))
		_, err = fleet.Cluster("mgmt").Clientset.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the registration itself is gone")
		left := registrationSecrets(ctx, name)
		Expect(left).NotTo(BeEmpty(), "the token on w1 is not revoked, as the error says")
		for _, s := range left {
			Expect(fleet.Cluster("w1").Clientset.CoreV1().Secrets(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{})).To(Succeed())
		}
	}, SpecTimeout(2*time.Minute))
})
