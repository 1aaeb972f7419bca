package recovery_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/e2e/lincheck"
)

// A lost majority with a survivor: two of three memory members lose
// power (their tmpfs comes back empty, the data-dir guard refuses), the
// third, the leader, keeps running with every acknowledged write.
var _ = Describe("a lost majority with a survivor", Ordered, func() {
	var c client.Client
	BeforeAll(func() { c = clients[cluster] })

	It("is recovered from the survivor with quorumLoss FromSurvivor: Available again with every key, under a linearizable workload", func(ctx SpecContext) {
		const ns, name = "ml-survivor", "mlsv"
		ec := survivorCluster(ctx, c, ns, name, &v1alpha1.RecoverySpec{QuorumLoss: v1alpha1.QuorumLossFromSurvivor})
		Expect(c.Create(ctx, ec)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(c.Delete(ctx, ec))).To(Succeed()) })
		e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
		kv := e2eutil.ConnectEtcd(ctx, fleet.Cluster(cluster).Config, c, ns, name)
		kv.PutKeys(ctx, "k", 100)
		waitThreeVoters(ctx, c, ns, name)
		leader := leaderOf(ctx, kv, c, ns, name)
		kv.Close()
		ids := e2eutil.MemberIDs(ctx, c, ns, name)
		load := lincheck.StartIn(ctx, sb, cluster, ns, name)
		stopFollowing := load.FollowMembers(ctx, c, ns, name)

		By("cutting the power of the two nodes that do not hold the leader " + leader)
		powerLossExcept(ctx, c, ns, name, leader)

		By("recovering from the survivor: a new cluster from its snapshot, grown back to 3")
		Eventually(func(g Gomega) {
			cur := &v1alpha1.EtcdCluster{}
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cur)).To(Succeed())
			g.Expect(cur.Status.Recovery).NotTo(BeNil(), "conditions %+v", cur.Status.Conditions)
			g.Expect(cur.Status.Recovery.FromSurvivor).To(Equal(leader))
			g.Expect(cur.Status.Recovery.Phase).To(Equal(v1alpha1.RecoveryRestored))
			g.Expect(e2eutil.Available(cur)).To(BeTrue())
			g.Expect(cur.Status.ReadyMembers).To(BeEquivalentTo(3))
		}).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Succeed())
		stopFollowing()
		load.StopAndCheck()

		now := e2eutil.MemberIDs(ctx, c, ns, name)
		Expect(now).To(HaveLen(3))
		for n := range now {
			Expect(ids).NotTo(HaveKey(n), "every member is new: the old ones, the survivor too, were removed")
		}
		sb.ExpectWarningEvent(ctx, cluster, ns, name, v1alpha1.ReasonRecoveringFromSurvivor)
		e2eutil.ExpectKeysIn(ctx, fleet.Cluster(cluster).Config, c, ns, name, "k", 100)
	}, SpecTimeout(9*time.Minute))

	It("with the default Manual says MajorityLost and touches nothing", func(ctx SpecContext) {
		const ns, name = "ml-manual", "mlman"
		ec := survivorCluster(ctx, c, ns, name, nil)
		Expect(c.Create(ctx, ec)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(c.Delete(ctx, ec))).To(Succeed()) })
		e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
		waitThreeVoters(ctx, c, ns, name)
		kv := e2eutil.ConnectEtcd(ctx, fleet.Cluster(cluster).Config, c, ns, name)
		leader := leaderOf(ctx, kv, c, ns, name)
		kv.Close()
		ids := e2eutil.MemberIDs(ctx, c, ns, name)
		powerLossExcept(ctx, c, ns, name, leader)

		Eventually(func(g Gomega) {
			cur := &v1alpha1.EtcdCluster{}
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cur)).To(Succeed())
			a := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionAvailable)
			g.Expect(a).NotTo(BeNil())
			g.Expect(a.Reason).To(Equal(v1alpha1.ReasonMajorityLost))
			g.Expect(a.Message).To(ContainSubstring("surviving: " + leader))
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Consistently(func(g Gomega) {
			cur := &v1alpha1.EtcdCluster{}
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cur)).To(Succeed())
			g.Expect(cur.Status.Recovery).To(BeNil())
			g.Expect(meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionQuorumRecovery)).To(BeNil())
			// Not even the lost members are marked for removal (their data
			// is gone for good, but under Manual a person decides), the
			// survivor is left alone and no member is added.
			members := e2eutil.Members(ctx, c, ns, name)
			g.Expect(members).To(HaveLen(3))
			for n, m := range members {
				g.Expect(m.Status.MemberID).To(Equal(ids[n]))
				g.Expect(m.DeletionTimestamp).To(BeNil(), "member %s is marked for removal", n)
			}
			g.Expect(e2eutil.PodReady(e2eutil.Pod(ctx, c, ns, leader)) || e2eutil.Pod(ctx, c, ns, leader).Status.Phase == corev1.PodRunning).
				To(BeTrue(), "the survivor's Pod runs")
			snaps := &v1alpha1.EtcdSnapshotList{}
			g.Expect(c.List(ctx, snaps, client.InNamespace(ns))).To(Succeed())
			g.Expect(snaps.Items).To(BeEmpty(), "no snapshot taken")
		}).WithTimeout(20 * time.Second).WithPolling(time.Second).Should(Succeed())
	}, SpecTimeout(5*time.Minute))
})

// survivorCluster is a 3-member memory cluster with recovery r and a
// suspended backup schedule to an object store of its own (where a
// survivor's snapshot goes).
func survivorCluster(ctx context.Context, c client.Client, ns, name string, r *v1alpha1.RecoverySpec) *v1alpha1.EtcdCluster {
	GinkgoHelper()
	s3 := e2eutil.StartObjectStore(ctx, "backups")
	sb.Namespace(ctx, cluster, ns)
	Expect(c.Create(ctx, e2eutil.S3Secret(ns, s3))).To(Succeed())
	ec := e2eutil.NewEtcdCluster(ns, name, 3, true)
	ec.Spec.Recovery = r
	ec.Spec.Backup = &v1alpha1.BackupSpec{Interval: &metav1.Duration{Duration: 24 * time.Hour}, Suspend: true,
		Location: v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: s3.Endpoint, Bucket: "backups",
			CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}}}
	return ec
}

// waitThreeVoters waits until the cluster has three Ready voters:
// Available already holds with two and a learner still catching up, and
// a lost learner is not the fault these specs inject.
func waitThreeVoters(ctx context.Context, c client.Client, ns, name string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cur := &v1alpha1.EtcdCluster{}
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cur)).To(Succeed())
		g.Expect(cur.Status.Members).To(HaveLen(3))
		for _, m := range cur.Status.Members {
			g.Expect(m.Role).To(Equal(v1alpha1.MemberRoleVoter), "member %s", m.Name)
			g.Expect(m.Ready).To(BeTrue(), "member %s", m.Name)
		}
	}).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// leaderOf names the member that leads, by asking the first member.
func leaderOf(ctx context.Context, kv *e2eutil.Etcd, c client.Client, ns, name string) string {
	GinkgoHelper()
	ids := e2eutil.MemberIDs(ctx, c, ns, name)
	var leader string
	Eventually(func(g Gomega) {
		for n := range ids {
			st, err := kv.Status(ctx, etcd.ClientURL(ns, name, n, false))
			g.Expect(err).NotTo(HaveOccurred())
			for m, id := range ids {
				if id == fmt.Sprintf("%016x", st.Leader) {
					leader = m
				}
			}
			g.Expect(leader).NotTo(BeEmpty())
			return
		}
	}).WithTimeout(30 * time.Second).Should(Succeed())
	return leader
}

// powerLossExcept cuts the power of the nodes of every member but keep,
// at once, for 2 s: their tmpfs comes back empty.
func powerLossExcept(ctx context.Context, c client.Client, ns, name, keep string) {
	GinkgoHelper()
	k := fleet.Cluster(cluster).Kubelet
	keepNode := e2eutil.PodNode(ctx, c, ns, keep)
	var nodes []string
	for n := range e2eutil.Members(ctx, c, ns, name) {
		if n != keep {
			node := e2eutil.PodNode(ctx, c, ns, n)
			Expect(node).NotTo(Equal(keepNode), "member %s shares the survivor's node", n)
			nodes = append(nodes, node)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(nodes))
	for i, n := range nodes {
		wg.Go(func() { errs[i] = k.PowerLoss(ctx, n, 2*time.Second) })
	}
	wg.Wait()
	for _, err := range errs {
		Expect(err).NotTo(HaveOccurred())
	}
}
