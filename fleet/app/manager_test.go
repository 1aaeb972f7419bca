package app_test

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/app"
	"github.com/etcdfleet/etcdfleet/fleet/settings"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

func TestManager(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "fleet manager Suite")
}

var _ = Describe("--ensure-workload-crds", func() {
	It("reports a cluster that lacks the workload CRDs; with the flag installs them and engages it, and its row follows the cluster", func(ctx SpecContext) {
		logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter)))
		_, file, _, _ := runtime.Caller(0)
		f, err := sandbox.Start(ctx, sandbox.Options{Clusters: []string{"mgmt", "bare"}, Nodes: 1,
			CRDDirs: []string{filepath.Join(filepath.Dir(file), "..", "..", "config", "crd", "management")}})
		Expect(err).NotTo(HaveOccurred())
		defer f.Stop()
		mgmt := f.Cluster("mgmt")
		const ns = "etcdfleet-system"
		_, err = mgmt.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = mgmt.Clientset.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "bare", Labels: map[string]string{fleetv1.RegistrationLabel: "true"}},
			Data:       map[string][]byte{fleetv1.KubeconfigKey: f.Cluster("bare").Kubeconfig},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		mc, err := client.New(mgmt.Config, client.Options{Scheme: app.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		connected := func(g Gomega) *metav1.Condition {
			fc := &fleetv1.FleetCluster{}
			g.Expect(mc.Get(ctx, types.NamespacedName{Namespace: ns, Name: "bare"}, fc)).To(Succeed())
			cond := meta.FindStatusCondition(fc.Status.Conditions, fleetv1.ConditionConnected)
			g.Expect(cond).NotTo(BeNil())
			return cond
		}

		By("without --ensure-workload-crds: a clear condition, nothing engaged")
		stop := startManager(mgmt, ns, false)
		Eventually(func(g Gomega) {
			cond := connected(g)
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal("MissingAPI"))
			g.Expect(cond.Message).To(And(ContainSubstring("EtcdCluster.etcd.etcdfleet.io/v1alpha1"),
				ContainSubstring("EtcdMember.etcd.etcdfleet.io/v1alpha1"), ContainSubstring("CRDs installed")))
		}).WithTimeout(time.Minute).Should(Succeed())
		stop()

		By("with --ensure-workload-crds")
		defer startManager(mgmt, ns, true)()
		bare, err := client.New(f.Cluster("bare").Config, client.Options{Scheme: app.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		Expect(apiextensionsv1.AddToScheme(bare.Scheme())).To(Succeed())
		Eventually(func(g Gomega) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(bare.Get(ctx, types.NamespacedName{Name: "etcdmembers.etcd.etcdfleet.io"}, crd)).To(Succeed())
		}).WithTimeout(time.Minute).Should(Succeed())
		// Engaging waits for the new CRDs to be served and the cluster's
		// caches to sync: seconds alone, 45 s once at load 25.
		Eventually(func(g Gomega) {
			g.Expect(connected(g).Status).To(Equal(metav1.ConditionTrue))
		}).WithTimeout(2 * time.Minute).Should(Succeed())

		By("showing a new EtcdCluster on the cluster's row at once, not at the next resync (an hour away)")
		Expect(bare.Create(ctx, e2eutil.NewEtcdCluster("default", "one", 1, false))).To(Succeed())
		Eventually(func(g Gomega) int32 {
			fc := &fleetv1.FleetCluster{}
			g.Expect(mc.Get(ctx, types.NamespacedName{Namespace: ns, Name: "bare"}, fc)).To(Succeed())
			return fc.Status.EtcdClusters
		}).WithTimeout(10 * time.Second).Should(BeEquivalentTo(1))
		// The budget bounds a hang, not speed: the two-cluster sandbox took
		// 2 m 13 s to start once at load 25 (stop 42's CI).
	}, SpecTimeout(6*time.Minute))
})

// startManager runs a fleet manager for the Secrets in ns until the
// returned stop is called.
func startManager(mgmt *sandbox.Cluster, ns string, ensureCRDs bool) (stop func()) {
	GinkgoHelper()
	c := settings.Default()
	c.Namespace, c.EnsureWorkloadCRDs = ns, ensureCRDs
	// The Secret holds the sandbox's admin, whom no admission policy
	// constrains (and whom installing CRDs needs).
	c.AllowUnconstrained = true
	c.LeaderElection, c.MetricsBindAddress, c.HealthProbeBindAddress = false, "0", "0"
	// Rows must follow changes through notifications, not the resync.
	c.Dashboard.Resync = time.Hour
	fm, err := app.New(mgmt.Config, c)
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fm.Start(ctx) }()
	return func() {
		cancel()
		Expect(<-done).To(Succeed())
	}
}
