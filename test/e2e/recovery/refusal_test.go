package recovery_test

import (
	"context"
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
)

// A recovery from a survivor must not drop what a member that may come
// back holds. A 4-member PVC cluster opted in to FromSurvivor loses two
// members for good (their nodes lose power and their claims and Pods are
// deleted, as with node-local storage that went with the node) while a
// third member's node is merely down: its claim stands. One member
// survives and answers. A majority is lost, the survivor could be
// recovered from, but the member that is only down may hold newer data:
// the recovery is refused, and nothing is touched. The fault comes at its
// worst moment: while the removal of a lost member is in flight (its
// replacement holds the cluster's lease; its finalizer cannot remove it
// from etcd without quorum).
var _ = Describe("a lost majority beside a PVC member whose node is only down", func() {
	It("is not recovered from the survivor: QuorumRecovery False SurvivorRecoveryRefused, naming that member, and nothing touched", func(ctx SpecContext) {
		const ns, name = "ml-refused", "mlref"
		c := clients[cluster]
		k := fleet.Cluster(cluster).Kubelet
		ec := survivorCluster(ctx, c, ns, name, &v1alpha1.RecoverySpec{QuorumLoss: v1alpha1.QuorumLossFromSurvivor})
		ec.Spec.Replicas = e2eutil.NewEtcdCluster(ns, name, 4, false).Spec.Replicas
		ec.Spec.Storage = e2eutil.NewEtcdCluster(ns, name, 4, false).Spec.Storage
		// Cleanups run last first: the cluster goes, then the powered-off
		// Nodes are waited for, so that the next spec finds every Node up.
		var powered []string
		DeferCleanup(func(ctx SpecContext) { waitNodesReady(ctx, powered, 3*time.Minute) })
		Expect(c.Create(ctx, ec)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(c.Delete(ctx, ec))).To(Succeed()) })
		e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
		ids := e2eutil.MemberIDs(ctx, c, ns, name)
		names := e2eutil.MemberNames(ctx, c, ns, name)
		down, lost, survivor := names[0], names[1:3], names[3]
		survivorPod := e2eutil.Pod(ctx, c, ns, survivor).UID

		By("powering off " + down + "'s node for longer than the spec; losing " + lost[0] + " and " + lost[1] + " with their claims")
		// Long enough to outlast every assertion below (the refusal came
		// 9 s after the cut, then 10 s of nothing touched): once it boots,
		// the member answers, and the recovery may rightly proceed.
		const downFor = time.Minute
		powered = append(powered, e2eutil.PodNode(ctx, c, ns, down))
		Expect(k.PowerLoss(ctx, powered[0], downFor)).To(Succeed())
		for _, m := range lost {
			node := e2eutil.PodNode(ctx, c, ns, m)
			powered = append(powered, node)
			Expect(k.PowerLoss(ctx, node, 20*time.Second)).To(Succeed())
			Expect(client.IgnoreNotFound(c.Delete(ctx, &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: etcd.PVCName(m)}}))).To(Succeed())
			Expect(client.IgnoreNotFound(c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: m}},
				client.GracePeriodSeconds(0)))).To(Succeed())
		}
		off := time.Now()

		By("the lost majority is named, a lost member's removal is in flight, and the recovery is refused because of " + down)
		Eventually(func(g Gomega) {
			cur := &v1alpha1.EtcdCluster{}
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cur)).To(Succeed())
			a := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionAvailable)
			g.Expect(a).NotTo(BeNil())
			g.Expect(a.Reason).To(Equal(v1alpha1.ReasonMajorityLost))
			g.Expect(cur.Status.Replacing).NotTo(BeNil(), "a lost member's removal holds the lease")
			r := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionQuorumRecovery)
			g.Expect(r).NotTo(BeNil(), "conditions %+v", cur.Status.Conditions)
			g.Expect(r.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(r.Reason).To(Equal(v1alpha1.ReasonSurvivorRecoveryRefused))
			g.Expect(r.Message).To(ContainSubstring(down))
		}).WithTimeout(downFor - 20*time.Second).WithPolling(time.Second).Should(Succeed())
		By("nothing is touched while " + down + " is down")
		Consistently(func(g Gomega) {
			cur := &v1alpha1.EtcdCluster{}
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cur)).To(Succeed())
			g.Expect(cur.Status.Recovery).To(BeNil(), "no recovery decided")
			members := e2eutil.Members(ctx, c, ns, name)
			g.Expect(members).To(HaveLen(4), "no member added or gone")
			for _, n := range []string{down, survivor} {
				g.Expect(members[n].DeletionTimestamp).To(BeNil(), "%s is not removed", n)
				g.Expect(members[n].Status.MemberID).To(Equal(ids[n]))
			}
			g.Expect(e2eutil.Pod(ctx, c, ns, survivor).UID).To(Equal(survivorPod), "the survivor's Pod is untouched")
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: etcd.PVCName(down)}, &corev1.PersistentVolumeClaim{})).
				To(Succeed(), "the down member's claim stands")
			snaps := &v1alpha1.EtcdSnapshotList{}
			g.Expect(c.List(ctx, snaps, client.InNamespace(ns))).To(Succeed())
			g.Expect(snaps.Items).To(BeEmpty(), "no snapshot of the survivor taken")
		}).WithTimeout(10 * time.Second).WithPolling(time.Second).Should(Succeed())
		Expect(time.Since(off)).To(BeNumerically("<", downFor), "%s was down throughout", down)
	}, SpecTimeout(6*time.Minute))
})

// waitNodesReady waits until every Node in nodes reports Ready again, so
// that the next spec finds every Node up.
func waitNodesReady(ctx context.Context, nodes []string, timeout time.Duration) {
	GinkgoHelper()
	cs := fleet.Cluster(cluster).Clientset
	Eventually(func(g Gomega) {
		for _, n := range nodes {
			node, err := cs.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			ready := false
			for _, c := range node.Status.Conditions {
				ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
			}
			g.Expect(ready).To(BeTrue(), "node %s is not Ready", n)
		}
	}).WithTimeout(timeout).WithPolling(time.Second).Should(Succeed())
}
