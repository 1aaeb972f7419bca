package etcdcluster

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
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
		startManager(h, false)

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

	// A power-loss replacement ends with the lost member's finalizer
	// removing it from etcd; its successor must follow from that event,
	// not from the cluster reconciler's requeueEtcd while a member is
	// being deleted (5 s of it once made DataDirLost → successor's Pod
	// take 6 s, issue 24). The reconciler here is never requeued on a
	// timer at all, so only a watch can bring the successor.
	It("add the successor of a removed member on its removal, with no timed requeue", func(ctx SpecContext) {
		h := newHarness()
		ec := h.newCluster(3)
		h.converge(ec, 3)
		startManager(h, true)

		victim := h.members()[0]
		// The member controller's part: it deletes the lost member; the
		// finalizer holds it while it is removed from etcd.
		Expect(k8sClient.Delete(ctx, &victim, client.Preconditions{UID: &victim.UID})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(h.get(ec).Status.ReadyMembers).To(Equal(int32(2)))
		}).WithTimeout(20*time.Second).Should(Succeed(), "the deleting member is not counted")
		Consistently(func() int { return len(h.members()) }).WithTimeout(time.Second).Should(Equal(3),
			"no successor while the lost member is still in etcd")

		Expect(h.etcd.Remove(ctx, etcdTarget(), mustID(&victim))).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&victim), &victim)).To(Succeed())
		controllerutil.RemoveFinalizer(&victim, v1alpha1.FinalizerMemberCleanup)
		Expect(k8sClient.Update(ctx, &victim)).To(Succeed())

		Eventually(func(g Gomega) {
			ms := h.members()
			g.Expect(ms).To(HaveLen(3))
			var successor *v1alpha1.EtcdMember
			for i := range ms {
				if ms[i].Name == victim.Name {
					g.Expect(ms[i].UID).NotTo(Equal(victim.UID), "the lost member is gone")
				}
				if ms[i].Status.PodName == "" {
					successor = &ms[i]
				}
			}
			g.Expect(successor).NotTo(BeNil(), "a new member")
			g.Expect(successor.Spec.InitialCluster).NotTo(BeEmpty(), "added to etcd as a learner, so its Pod may be created")
		}).WithTimeout(30*time.Second).Should(Succeed(),
			"the removal of the lost member must wake the reconciler: it is never requeued on a timer here")
	})
})

// startManager runs the cluster reconciler under a manager with the
// watches workload.Watches names, until the spec ends. With untimed, every
// RequeueAfter it returns is dropped: only watch events (and errors'
// backoff) bring another reconcile.
func startManager(h *harness, untimed bool) {
	GinkgoHelper()
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
		res, err := r.Reconcile(ctx, string(req.ClusterName), req.NamespacedName)
		if untimed {
			res = ctrl.Result{}
		}
		return res, err
	}))).To(Succeed())
	mctx, cancel := context.WithCancel(context.Background())
	DeferCleanup(cancel)
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(mctx)).To(Succeed())
	}()
}
