package recovery_test

import (
	"context"
	"maps"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/datadirguard"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/e2e/lincheck"
)

// Hard power loss (no shutdown signal) on the "recovery" cluster: the kubelet
// restarts the same Pods in place, PVC data survives, tmpfs does not.
var _ = Describe("hard power loss", Ordered, func() {
	var c client.Client
	BeforeAll(func() { c = clients[cluster] })

	It("of one node replaces its memory member with a new ID; the others keep theirs and every key", func(ctx SpecContext) {
		const ns, name = "pl-one", "plone"
		etcd, ids := startCluster(ctx, c, ns, name, true)
		load := lincheck.StartIn(ctx, sb, cluster, ns, name)
		victim := e2eutil.FirstMember(ctx, c, ns, name)
		k := fleet.Cluster(cluster).Kubelet
		Expect(k.PowerLoss(ctx, e2eutil.PodNode(ctx, c, ns, victim), 2*time.Second)).To(Succeed())

		By("the member on the wiped tmpfs goes, and a new member with a new ID takes its place")
		expectReplacedWithNewID(ctx, c, ns, name, victim, ids, load)
		sb.ExpectWarningEvent(ctx, cluster, ns, victim, "MemoryMemberLost")
		etcd.Close()
		e2eutil.ExpectKeysIn(ctx, fleet.Cluster(cluster).Config, c, ns, name, "k", 100)
	}, SpecTimeout(6*time.Minute))

	It("of every node resumes a PVC cluster in place: same member IDs, every key, no Pod deleted", func(ctx SpecContext) {
		const ns, name = "pl-pvc", "plpvc"
		etcd, ids := startCluster(ctx, c, ns, name, false)
		etcd.Close()
		uids := e2eutil.PodUIDs(ctx, c, ns, name)
		log, err := e2eutil.WatchPods(ctx, fleet.Cluster(cluster).Clientset, ns)
		Expect(err).NotTo(HaveOccurred())
		defer log.Stop()
		load := lincheck.StartIn(ctx, sb, cluster, ns, name)
		Expect(fleet.Cluster(cluster).PowerLoss(ctx, 2*time.Second)).To(Succeed())

		By("waiting for every Pod to restart in place (restartCount+1) and the cluster to be Available")
		Eventually(func(g Gomega) {
			for n, uid := range uids {
				p := e2eutil.Pod(ctx, c, ns, n)
				g.Expect(p.UID).To(Equal(uid))
				g.Expect(p.Status.ContainerStatuses).NotTo(BeEmpty())
				g.Expect(p.Status.ContainerStatuses[0].RestartCount).To(BeNumerically(">=", 1), "Pod %s not restarted yet", n)
			}
		}).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
		load.StopAndCheck()
		Expect(e2eutil.MemberIDs(ctx, c, ns, name)).To(Equal(ids))
		Expect(e2eutil.PodUIDs(ctx, c, ns, name)).To(Equal(uids))
		Expect(log.Count(watch.Deleted)).To(BeEmpty(), "no Pod deleted")
		e2eutil.ExpectKeysIn(ctx, fleet.Cluster(cluster).Config, c, ns, name, "k", 100)
	}, SpecTimeout(5*time.Minute))

	It("of every node of a memory cluster says QuorumLost and TotalLoss, and without restoreOnTotalLoss revives no member under an old ID", func(ctx SpecContext) {
		const ns, name = "pl-all", "plall"
		etcd, ids := startCluster(ctx, c, ns, name, true)
		etcd.Close()
		Expect(fleet.Cluster(cluster).PowerLoss(ctx, 2*time.Second)).To(Succeed())
		Eventually(func(g Gomega) {
			ec := &v1alpha1.EtcdCluster{}
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ec)).To(Succeed())
			cond := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionAvailable)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal(v1alpha1.ReasonQuorumLost))
			tl := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionTotalLoss)
			g.Expect(tl).NotTo(BeNil(), "total loss is reported")
			g.Expect(tl.Reason).To(Equal(v1alpha1.ReasonRestoreNotEnabled), "without the opt-in nothing is restored")
			for n := range ids {
				lost, _ := datadirguard.DataDirLost(e2eutil.Pod(ctx, c, ns, n))
				g.Expect(lost).To(BeTrue(), "guard of %s has not refused yet", n)
			}
		}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		Consistently(func(g Gomega) {
			for n := range ids {
				p := &corev1.Pod{}
				if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, p); err == nil {
					for _, cs := range p.Status.ContainerStatuses {
						g.Expect(cs.State.Running).To(BeNil(), "member %s revived on an empty tmpfs", n)
					}
				}
			}
			members := e2eutil.Members(ctx, c, ns, name)
			g.Expect(members).To(HaveLen(len(ids)), "nothing removed without quorum")
			for n, m := range members {
				g.Expect(m.Status.MemberID).To(Equal(ids[n]))
			}
		}).WithTimeout(20 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	}, SpecTimeout(4*time.Minute))
})

// startCluster creates a 3-member cluster, waits until it is Available,
// writes 100 keys under "k" and returns a client and the member IDs. The
// cluster is deleted after the spec, so that later node-wide faults on the
// shared sandbox cluster do not touch it.
func startCluster(ctx context.Context, c client.Client, ns, name string, memory bool) (*e2eutil.Etcd, map[string]string) {
	GinkgoHelper()
	sb.Namespace(ctx, cluster, ns)
	ec := e2eutil.NewEtcdCluster(ns, name, 3, memory)
	Expect(c.Create(ctx, ec)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(c.Delete(ctx, ec))).To(Succeed()) })
	e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
	etcd := e2eutil.ConnectEtcd(ctx, fleet.Cluster(cluster).Config, c, ns, name)
	etcd.PutKeys(ctx, "k", 100)
	return etcd, e2eutil.MemberIDs(ctx, c, ns, name)
}

// expectReplacedWithNewID waits until member victim of ns/name is gone and
// the cluster is available again, checks the client workload load, and
// returns the new members (name to ID): every other member kept its ID
// from ids, and each new one has an ID that no old member had.
func expectReplacedWithNewID(ctx context.Context, c client.Client, ns, name, victim string, ids map[string]string, load *lincheck.Running) map[string]string {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		_, ok := e2eutil.Members(ctx, c, ns, name)[victim]
		g.Expect(ok).To(BeFalse(), "member %s still there", victim)
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	e2eutil.WaitAvailable(ctx, c, ns, name, 3*time.Minute)
	load.StopAndCheck()
	now := e2eutil.MemberIDs(ctx, c, ns, name)
	Expect(now).To(HaveLen(len(ids)))
	added := map[string]string{}
	for n, id := range ids {
		if n != victim {
			Expect(now).To(HaveKeyWithValue(n, id), "a surviving member kept its ID")
		}
	}
	for n, id := range now {
		if _, old := ids[n]; !old {
			Expect(id).NotTo(BeElementOf(slices.Collect(maps.Values(ids))), "the new member %s has a new ID", n)
			added[n] = id
		}
	}
	return added
}
