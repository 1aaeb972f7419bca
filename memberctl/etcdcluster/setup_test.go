package etcdcluster

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// SetupWithManager: the watches wake the reconciler. The manager's cache is
// limited to this spec's namespace so it never touches the other specs'.
var _ = Describe("SetupWithManager", func() {
	It("bootstraps through the manager and is woken by member status changes", func(ctx SpecContext) {
		h := newHarness()
		mgr, err := ctrl.NewManager(cfg, ctrl.Options{
			Scheme:  scheme,
			Metrics: metricsserver.Options{BindAddress: "0"},
			Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{h.ns: {}}},
		})
		Expect(err).NotTo(HaveOccurred())
		cl := &workload.Cluster{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Recorder: h.events, Etcd: h.etcd}
		r := &Reconciler{Clusters: workload.Static{C: cl}}
		Expect(SetupWithManager(mgr, r, controller.Options{SkipNameValidation: ptr.To(true)})).To(Succeed())
		mctx, cancel := context.WithCancel(context.Background())
		DeferCleanup(cancel)
		go func() {
			defer GinkgoRecover()
			Expect(mgr.Start(mctx)).To(Succeed())
		}()

		ec := h.newCluster(1)
		var seed v1alpha1.EtcdMember
		Eventually(func(g Gomega) {
			ms := h.members()
			g.Expect(ms).To(HaveLen(1))
			g.Expect(ms[0].Spec.InitialCluster).NotTo(BeEmpty())
			seed = ms[0]
		}).WithTimeout(20 * time.Second).Should(Succeed())

		// Only the member's status changes now; the Owns watch must wake
		// the reconciler well before its steady-state requeue.
		h.startMember(&seed)
		Eventually(func(g Gomega) {
			cur := h.get(ec)
			g.Expect(cur.Status.ClusterID).NotTo(BeEmpty())
			g.Expect(cur.Status.ReadyMembers).To(Equal(int32(1)))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		Consistently(func() int { return len(h.members()) }).WithTimeout(2*time.Second).Should(Equal(1),
			"the cache lagging our own writes must not create a second member")
	})
})
