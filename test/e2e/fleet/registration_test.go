package fleet_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
)

// probeNS holds the probe EtcdClusters of the registration spec below:
// replicas 0, so that the
// cluster reconciler writes a status without starting any etcd.
const probeNS = "probe"

func registrationSpecs() {
	It("engages clusters registered by Secret and disengages one whose Secret is deleted and one whose label is removed", func(ctx SpecContext) {
		reg := []string{"w1", "w2", "w3"}
		By("starting with no cluster registered")
		for _, w := range workloads {
			deleteSecret(ctx, w)
		}
		Eventually(func(g Gomega) {
			g.Expect(fm.Provider.States()).To(BeEmpty())
			for _, w := range workloads {
				_, err := row(ctx, w)
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "FleetCluster %s: %v", w, err)
			}
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())

		By("registering w1, w2 and w3 by Secret: their FleetClusters become Connected=True")
		t0 := time.Now()
		for _, w := range reg {
			putSecret(ctx, w, kubeconfigData(goodKubeconfig[w]))
		}
		for _, w := range reg {
			c := expectRow(ctx, w, fleetv1.ConditionConnected, metav1.ConditionTrue)
			GinkgoWriter.Printf("FleetCluster %s: Connected=%s %s %q\n", w, c.Status, c.Reason, c.Message)
		}
		engage := map[string]time.Duration{}
		for _, w := range reg {
			at := states.connectedAt(w, t0)
			Expect(at).NotTo(BeZero(), "cluster %s never seen connected", w)
			engage[w] = at.Sub(t0)
		}
		figures.Lock()
		figures.engageTime = maxOf(engage)
		figures.Unlock()
		AddReportEntry("engage time (Secret created → Connected)", durations(engage))
		_, err := row(ctx, "w4")
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "unregistered w4 has no FleetCluster")

		By("unregistering w1 by deleting its Secret and w2 by removing its label")
		deleteSecret(ctx, "w1")
		setLabelled(ctx, "w2", false)
		Eventually(func(g Gomega) {
			for _, w := range []string{"w1", "w2"} {
				_, ok := fm.Provider.State(w)
				g.Expect(ok).To(BeFalse(), "the provider still has %s", w)
				// The fleet's registry lets go of a cluster only once its
				// engagement context has ended.
				_, _, err := fm.EtcdObjects(ctx, w)
				g.Expect(err).To(HaveOccurred(), "cluster %s is still engaged", w)
			}
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
		st, ok := fm.Provider.State("w3")
		Expect(ok && st.Connected).To(BeTrue(), "w3 stays engaged: %+v", st)

		By("creating an EtcdCluster in each: only the still registered w3 reconciles it")
		for _, w := range reg {
			Expect(client.IgnoreAlreadyExists(wc[w].Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: probeNS}}))).To(Succeed())
			Expect(wc[w].Create(ctx, e2eutil.NewEtcdCluster(probeNS, "probe", 0, false))).To(Succeed())
			DeferCleanup(func(ctx context.Context) {
				Expect(client.IgnoreNotFound(wc[w].Delete(ctx, &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: probeNS, Name: "probe"}}))).To(Succeed())
			})
		}
		Eventually(func() bool { return hasStatus(ctx, "w3") }).WithContext(ctx).
			WithTimeout(30*time.Second).WithPolling(100*time.Millisecond).Should(BeTrue(), "the registered w3 reconciles its probe")
		Consistently(func(g Gomega) {
			for _, w := range []string{"w1", "w2"} {
				g.Expect(hasStatus(ctx, w)).To(BeFalse(), "cluster %s is unregistered yet its EtcdCluster was reconciled", w)
				var ms etcdv1.EtcdMemberList
				g.Expect(wc[w].List(ctx, &ms, client.InNamespace(probeNS))).To(Succeed())
				g.Expect(ms.Items).To(BeEmpty(), "cluster %s", w)
			}
		}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

		By("their FleetClusters go: w1's with its Secret, w2's once unregistered for the dashboard's orphan grace")
		Eventually(func(g Gomega) {
			for _, w := range []string{"w1", "w2"} {
				fc, err := row(ctx, w)
				if apierrors.IsNotFound(err) {
					continue
				}
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(apimeta.IsStatusConditionFalse(fc.Status.Conditions, fleetv1.ConditionConnected)).To(BeTrue(),
					"FleetCluster %s is still there and not Connected=False: %+v", w, fc.Status.Conditions)
			}
		}).WithContext(ctx).WithTimeout(90 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		Expect(hasStatus(ctx, "w1") || hasStatus(ctx, "w2")).To(BeFalse(), "still nothing reconciled in w1 or w2")

		By("re-registering w1 and w2: they engage again and reconcile what was created meanwhile")
		putSecret(ctx, "w1", kubeconfigData(goodKubeconfig["w1"]))
		setLabelled(ctx, "w2", true)
		for _, w := range reg {
			expectRow(ctx, w, fleetv1.ConditionConnected, metav1.ConditionTrue)
		}
		Eventually(func() bool { return hasStatus(ctx, "w1") && hasStatus(ctx, "w2") }).WithContext(ctx).
			WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(BeTrue())
	}, SpecTimeout(5*time.Minute))
}

// hasStatus reports whether w's probe EtcdCluster was ever reconciled.
func hasStatus(ctx context.Context, w string) bool {
	GinkgoHelper()
	ec := &etcdv1.EtcdCluster{}
	Expect(wc[w].Get(ctx, types.NamespacedName{Namespace: probeNS, Name: "probe"}, ec)).To(Succeed())
	return ec.Status.ObservedGeneration != 0 || len(ec.Status.Conditions) > 0
}
