package ctl_test

import (
	"bytes"
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/ctl"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

var fleet *sandbox.Fleet

func TestCtl(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "etcdfleetctl Suite")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	_, file, _, _ := runtime.Caller(0)
	var err error
	fleet, err = sandbox.Start(ctx, sandbox.Options{Clusters: []string{"mgmt", "w1"}, Nodes: 1,
		CRDDirs: []string{filepath.Join(filepath.Dir(file), "..", "..", "config", "crd", "management")}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(fleet.Stop()).To(Succeed()) })
}, NodeTimeout(3*time.Minute))

const ns = "etcdfleet-system"

// register registers cluster-wide: the specs below check rights in any
// namespace, and the cluster-wide warning.
func register(ctx context.Context, name string, workload *rest.Config) (string, error) {
	return registerWith(ctx, ctl.RegisterOptions{Name: name, Workload: workload, TokenDuration: time.Hour, ClusterWide: true})
}

// registered returns the rest.Config the manager would build from the Secret.
func registered(ctx context.Context, name string) *rest.Config {
	s, err := fleet.Cluster("mgmt").Clientset.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, s.Labels).To(HaveKeyWithValue(fleetv1.RegistrationLabel, "true"))
	cfg, err := clientcmd.RESTConfigFromKubeConfig(s.Data[fleetv1.KubeconfigKey])
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return cfg
}

func can(ctx context.Context, cfg *rest.Config, verb, group, resource, sub, namespace string) bool {
	cs, err := kubernetes.NewForConfig(cfg)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: verb, Group: group, Resource: resource, Subresource: sub, Namespace: namespace}}}, metav1.CreateOptions{})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return r.Status.Allowed
}

var _ = Describe("register", Ordered, func() {
	It("installs the workload side and writes a Secret holding only the server, CA and a ServiceAccount token", func(ctx SpecContext) {
		w1 := fleet.Cluster("w1")
		out, err := register(ctx, "w1", w1.Config)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring(ctl.ClusterWideWarning), "cluster-wide says what it grants")
		cfg := registered(ctx, "w1")
		Expect(cfg.Host).To(Equal(w1.Config.Host))
		Expect(cfg.BearerToken).NotTo(BeEmpty())
		Expect(cfg.CertData).To(BeEmpty(), "never the admin credentials used to run the command")
		Expect(can(ctx, cfg, "create", "", "pods", "portforward", "default")).To(BeTrue())
		Expect(can(ctx, cfg, "watch", "etcd.etcdfleet.io", "etcdmembers", "", "default")).To(BeTrue())
		Expect(can(ctx, cfg, "delete", "", "nodes", "", "")).To(BeFalse(), "least privilege")
	}, SpecTimeout(time.Minute))

	It("rotates the token when run again", func(ctx SpecContext) {
		before := registered(ctx, "w1").BearerToken
		_, err := register(ctx, "w1", fleet.Cluster("w1").Config)
		Expect(err).NotTo(HaveOccurred())
		Expect(registered(ctx, "w1").BearerToken).NotTo(Equal(before))
	}, SpecTimeout(time.Minute))

	It("refuses a name already registered for another server", func(ctx SpecContext) {
		_, err := register(ctx, "w1", fleet.Cluster("mgmt").Config)
		Expect(err).To(MatchError(ContainSubstring("already registered")))
	}, SpecTimeout(time.Minute))

	It("refuses to register a cluster already registered under another name", func(ctx SpecContext) {
		s, err := fleet.Cluster("mgmt").Clientset.CoreV1().Secrets(ns).Get(ctx, "w1", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Annotations).To(HaveKey(fleetv1.ClusterIDAnnotation))
		_, err = register(ctx, "w1-again", fleet.Cluster("w1").Config)
		Expect(err).To(MatchError(And(ContainSubstring("already registered by Secret "+ns+"/w1"),
			ContainSubstring(s.Annotations[fleetv1.ClusterIDAnnotation]))))
		_, err = fleet.Cluster("mgmt").Clientset.CoreV1().Secrets(ns).Get(ctx, "w1-again", metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing written for the refused name")
	}, SpecTimeout(time.Minute))

	It("says so when the workload cluster is unreachable", func(ctx SpecContext) {
		w1 := fleet.Cluster("w1")
		Expect(w1.Partition()).To(Succeed())
		defer func() { Expect(w1.Heal()).To(Succeed()) }()
		cfg := rest.CopyConfig(w1.Config)
		cfg.Timeout = 5 * time.Second
		_, err := register(ctx, "other", cfg)
		Expect(err).To(MatchError(ContainSubstring("workload cluster is unreachable")))
	}, SpecTimeout(time.Minute))

	It("says so when the credentials lack permissions", func(ctx SpecContext) {
		w1 := fleet.Cluster("w1")
		_, err := w1.Clientset.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nobody"}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		kc, err := w1.ServiceAccountKubeconfig(ctx, "default", "nobody", time.Hour)
		Expect(err).NotTo(HaveOccurred())
		cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
		Expect(err).NotTo(HaveOccurred())
		_, err = register(ctx, "weak", cfg)
		Expect(err).To(MatchError(ContainSubstring("permission denied")))
	}, SpecTimeout(time.Minute))

	It("unregisters, optionally removing the workload RBAC", func(ctx SpecContext) {
		var out bytes.Buffer
		w1 := fleet.Cluster("w1")
		Expect(ctl.Unregister(ctx, ctl.UnregisterOptions{Name: "w1", Management: fleet.Cluster("mgmt").Config, Namespace: ns,
			Workload: w1.Config, RemoveRBAC: true, Out: &out})).To(Succeed())
		_, err := fleet.Cluster("mgmt").Clientset.CoreV1().Secrets(ns).Get(ctx, "w1", metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue())
		_, err = w1.Clientset.CoreV1().ServiceAccounts(ctl.WorkloadNamespace).Get(ctx, ctl.WorkloadSA, metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue())
		_, err = w1.Clientset.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, ctl.PodsPolicy, metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue())
		_, err = w1.Clientset.RbacV1().ClusterRoleBindings().Get(ctx, ctl.WorkloadIdentityRole, metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the identity binding goes too")
		_, err = w1.Clientset.RbacV1().ClusterRoles().Get(ctx, ctl.WorkloadIdentityRole, metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the identity role goes too")
		err = ctl.Unregister(ctx, ctl.UnregisterOptions{Name: "w1", Management: fleet.Cluster("mgmt").Config, Namespace: ns, Out: &out})
		Expect(err).To(MatchError(ContainSubstring("not registered")))
		Expect(strings.Count(out.String(), "deleted Secret")).To(Equal(1))
	}, SpecTimeout(time.Minute))
})
