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
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// The watches of workload.Kinds wake the reconciler. memberctl/operator.Setup
// registers it the same way (it cannot be imported here: it imports this
// package). The manager's cache is limited to this spec's namespace so it
// never touches the other specs'.
var _ = Describe("the watches of workload.Kinds", func() {
	It("bootstrap through a manager and wake the reconciler on member status changes", func(ctx SpecContext) {
		h := newHarness()
		mgr, err := mcmanager.New(cfg, nil, ctrl.Options{
			Scheme:  scheme,
			Metrics: metricsserver.Options{BindAddress: "0"},
			Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{h.ns: {}}},
		})
		Expect(err).NotTo(HaveOccurred())
		local := mgr.GetLocalManager()
		cl := &workload.Cluster{Client: local.GetClient(), Reader: local.GetAPIReader(), Recorder: h.events, Etcd: h.etcd}
		r := &Reconciler{Clusters: workload.Static{C: cl}}
		reconciled, owned := workload.Watches(workload.ClusterController)
		b := mcbuilder.ControllerManagedBy(mgr).Named(workload.ClusterController).For(reconciled).
			WithOptions(controller.TypedOptions[mcreconcile.Request]{SkipNameValidation: ptr.To(true)})
		for _, o := range owned {
			b = b.Owns(o)
		}
		Expect(b.Complete(mcreconcile.Func(func(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
			return r.Reconcile(ctx, string(req.ClusterName), req.NamespacedName)
		}))).To(Succeed())
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
