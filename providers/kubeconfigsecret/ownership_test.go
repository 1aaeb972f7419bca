package kubeconfigsecret_test

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
)

// handCoordinator is an Options.Ownership whose decisions the test makes:
// it records the clusters the provider hands it, and engages the
// provider's Aware for a cluster when told to, with a context the test
// ends. It stands for multicluster-runtime's sharded coordinator, whose
// own HRW and fences the fleet e2e exercises.
type handCoordinator struct {
	mu      sync.Mutex
	aware   multicluster.Aware
	claimed map[string]context.Context // the context of each cluster's latest Engage
	claims  map[string]int
}

func (h *handCoordinator) AddAware(a multicluster.Aware) { h.aware = a }

func (h *handCoordinator) Engage(ctx context.Context, name multicluster.ClusterName, _ cluster.Cluster) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.claimed[string(name)] = ctx
	h.claims[string(name)]++
	return nil
}

func (h *handCoordinator) Runnable() manager.Runnable { return nil }

// own engages name with a context derived from parent, as the sharded
// coordinator does, and returns its cancel.
func (h *handCoordinator) own(parent context.Context, name string) context.CancelFunc {
	ctx, cancel := context.WithCancel(parent)
	Expect(h.aware.Engage(ctx, multicluster.ClusterName(name), nil)).To(Succeed())
	return cancel
}

func (h *handCoordinator) claimCtx(name string) context.Context {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.claimed[name]
}

func (h *handCoordinator) claimCount(name string) func() int {
	return func() int {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.claims[name]
	}
}

var _ = Describe("Ownership", func() {
	It("connects only to the clusters it owns, and disconnects when it loses one", func(ctx SpecContext) {
		const label = "test.example/sharded-kubeconfig"
		coord := &handCoordinator{claimed: map[string]context.Context{}, claims: map[string]int{}}
		opts := testOptions
		opts.Label, opts.ControllerName, opts.OnChange, opts.Ownership = label, "kubeconfigsecret-sharded", nil, coord
		p := startProvider(ctx, opts)
		put := func(name string, kc []byte) {
			sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretNS, Name: name, Labels: map[string]string{label: "true"}},
				Data: map[string][]byte{testKey: kc}}
			Expect(mgmtC.Create(ctx, sec)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(mgmtC.Delete(ctx, sec))).To(Succeed()) })
		}
		reason := func(name string) func() string {
			return func() string { st, _ := p.State(name); return st.Reason }
		}

		By("handing every registered cluster to the coordinator and touching none it does not own")
		put("own-a", w1.Kubeconfig)
		// A kubeconfig that cannot even be parsed: any attempt to connect
		// would report InvalidKubeconfig instead of NotOwned.
		put("own-b", []byte("not a kubeconfig"))
		Eventually(coord.claimCount("own-a")).Should(Equal(1))
		Eventually(coord.claimCount("own-b")).Should(Equal(1))
		Eventually(reason("own-a")).Should(Equal(kubeconfigsecret.ReasonNotOwned))
		// A registered cluster shows Connecting until the claim's outcome
		// is recorded, a moment after the claim itself.
		Eventually(reason("own-b")).Should(Equal(kubeconfigsecret.ReasonNotOwned))
		Consistently(reason("own-b")).WithTimeout(2 * time.Second).Should(Equal(kubeconfigsecret.ReasonNotOwned))
		_, err := p.Get(ctx, "own-a")
		Expect(err).To(MatchError(multicluster.ErrClusterNotFound))

		By("connecting once it owns a cluster")
		release := coord.own(coord.claimCtx("own-a"), "own-a")
		Eventually(reason("own-a")).WithTimeout(30 * time.Second).Should(Equal(kubeconfigsecret.ReasonConnected))
		st, _ := p.State("own-a")
		Expect(st.Owned).To(BeTrue())
		engaged, ok := p.Context("own-a")
		Expect(ok).To(BeTrue())

		By("refusing every request of the cluster's clients once quiesced, before the ownership ends")
		cl, err := p.Get(ctx, "own-a")
		Expect(err).NotTo(HaveOccurred())
		var ns corev1.Namespace
		Expect(cl.GetAPIReader().Get(ctx, client.ObjectKey{Name: "default"}, &ns)).To(Succeed())
		Expect(p.Quiesce(ctx, "own-a")).To(Succeed())
		Expect(cl.GetAPIReader().Get(ctx, client.ObjectKey{Name: "default"}, &ns)).To(MatchError(kubeconfigsecret.ErrQuiesced))
		Expect(p.Quiesce(ctx, "no-such-cluster")).To(Succeed(), "a cluster never connected has nothing in flight")

		By("starting no new attempt under the quiesced ownership, as a retry would after a failed pre-flight")
		// A new kubeconfig ends the engagement (changed) while the
		// ownership lives on: the coordinator releases the fence after
		// Quiesce and ends the ownership only concurrently.
		sec := &corev1.Secret{}
		Expect(mgmtC.Get(ctx, client.ObjectKey{Namespace: secretNS, Name: "own-a"}, sec)).To(Succeed())
		sec.Data[testKey] = append(append([]byte{}, w1.Kubeconfig...), "\n# rotated\n"...)
		Expect(mgmtC.Update(ctx, sec)).To(Succeed())
		Eventually(engaged.Done()).WithTimeout(10 * time.Second).Should(BeClosed())
		Consistently(reason("own-a")).WithTimeout(3*time.Second).ShouldNot(Equal(kubeconfigsecret.ReasonConnected),
			"connected again under the ownership Quiesce ended")

		By("disengaging when the ownership ends, and connecting again when it comes back")
		release()
		Eventually(engaged.Done()).WithTimeout(5 * time.Second).Should(BeClosed())
		Eventually(reason("own-a")).Should(Equal(kubeconfigsecret.ReasonNotOwned))
		_, err = p.Get(ctx, "own-a")
		Expect(err).To(MatchError(multicluster.ErrClusterNotFound))
		coord.own(context.Background(), "own-a")
		Eventually(reason("own-a")).WithTimeout(30 * time.Second).Should(Equal(kubeconfigsecret.ReasonConnected))
		cl, err = p.Get(ctx, "own-a")
		Expect(err).NotTo(HaveOccurred())
		Expect(cl.GetAPIReader().Get(ctx, client.ObjectKey{Name: "default"}, &ns)).To(Succeed(), "a new ownership connects through a new gate")

		By("claiming again a cluster whose ownership ended only because another cluster was removed")
		// mcr's sharded coordinator derives the contexts of the clusters it
		// starts while handling one Engage from that cluster's context.
		coord.own(coord.claimCtx("own-b"), "own-a")
		Eventually(reason("own-a")).WithTimeout(30 * time.Second).Should(Equal(kubeconfigsecret.ReasonConnected))
		claims := coord.claimCount("own-a")()
		Expect(mgmtC.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretNS, Name: "own-b"}})).To(Succeed())
		Eventually(coord.claimCount("own-a")).WithTimeout(5*time.Second).Should(Equal(claims+1), "own-a is handed to the coordinator again")
	})
})
