package recovery_test

import (
	"context"
	"maps"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/e2e/lincheck"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

// A long outage and a drain, done by Kubernetes' own controllers: the
// sandbox runs kube-controller-manager's node lifecycle, taint eviction
// and disruption controllers, and its kubelet renews Node Leases. One
// spec, to keep CI time down: the drain is tried on a PVC cluster while
// the first node's outage is under way, and the long outage takes the
// other members' nodes with it, and one member of a memory cluster whose
// other two members run on the Nodes that stay up.
//
// The "recovery" cluster has a fourth and a fifth Node (suite_test.go)
// that stay up: with every Node down the node lifecycle controller evicts
// nothing, as in a real cluster, and etcdfleet's Pods stay where they are.
var _ = Describe("a long outage and a drain", func() {
	It("holds a drain while a voter's node is down; evicts every member of a PVC cluster whose nodes stay off past tolerationSeconds, "+
		"which come back on their claims with their IDs and every key; replaces the evicted member of a memory cluster that kept quorum, "+
		"and names the total loss of one that lost its every member; then lets the drain proceed", func(ctx SpecContext) {
		const ns, name = "outage", "outage"
		c, cs := clients[cluster], fleet.Cluster(cluster).Clientset
		k := fleet.Cluster(cluster).Kubelet
		etcd, ids := startCluster(ctx, c, ns, name, false)
		etcd.Close()
		uids := e2eutil.PodUIDs(ctx, c, ns, name)
		members := e2eutil.MemberNames(ctx, c, ns, name)
		a, b := members[0], members[1]
		nodes, distinct := map[string]string{}, map[string]bool{}
		for _, m := range members {
			nodes[m] = e2eutil.PodNode(ctx, c, ns, m)
			distinct[nodes[m]] = true
		}
		Expect(distinct).To(HaveLen(3), "one member per node")
		Expect(k.NodeNames()).To(HaveLen(5), "two Nodes without a member stay up")
		memVictim, memIDs := startMemoryBeside(ctx, c, nodes)
		lone := startLoneMemory(ctx, c, nodes)
		memLoad := lincheck.StartIn(ctx, sb, cluster, memNS, memName)
		waitDisruptionsAllowed(ctx, cs, ns, name, 1)
		load := lincheck.StartIn(ctx, sb, cluster, ns, name)

		By("powering off " + a + "'s node: once the controller marks its Pod NotReady, the voter PDB refuses to evict " + b)
		// Off until the spec boots every member's node together below.
		Expect(k.PowerLoss(ctx, nodes[a], untilPowerOn)).To(Succeed())
		waitDisruptionsAllowed(ctx, cs, ns, name, 0)
		// b's readiness (etcd's /health) fails while the two left elect a
		// leader, when a led: CI-J read it not Ready then, at load 25.
		Eventually(func() bool { return e2eutil.PodReady(e2eutil.Pod(ctx, c, ns, b)) }).WithContext(ctx).
			WithTimeout(30*time.Second).WithPolling(200*time.Millisecond).Should(BeTrue(), "%s Ready: the refusal is for %s", b, a)
		err := evict(ctx, cs, ns, b)
		Expect(apierrors.IsTooManyRequests(err)).To(BeTrue(), "eviction of %s while %s is down: %v", b, a, err)
		Expect(e2eutil.Pod(ctx, c, ns, b).DeletionTimestamp).To(BeNil())

		By("powering off the other members' nodes past the grace period and tolerationSeconds: the taint eviction controller evicts every member")
		// The nodes stay off until every eviction was seen, however long a
		// loaded controller takes: a timed boot that came first would
		// make the spec test a short outage instead (at 38 s, CI once
		// booted them before the taint eviction controller acted).
		for _, m := range members[1:] {
			Expect(k.PowerLoss(ctx, nodes[m], untilPowerOn)).To(Succeed())
		}
		evictees := []evictee{memVictim, lone}
		for _, m := range members {
			evictees = append(evictees, evictee{ns: ns, name: m, uid: uids[m]})
		}
		Eventually(func(g Gomega) {
			for _, e := range evictees {
				m, p := e.name, &corev1.Pod{}
				g.Expect(c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: m}, p)).To(Succeed())
				g.Expect(p.UID).To(Equal(e.uid), "%s's Pod went before its node booted", m)
				g.Expect(p.DeletionTimestamp).NotTo(BeNil(), "%s's Pod not evicted yet", m)
				g.Expect(p.Status.Conditions).To(ContainElement(And(HaveField("Type", corev1.DisruptionTarget),
					HaveField("Reason", "DeletionByTaintManager"))), "%s evicted by the taint eviction controller", m)
			}
		}).WithTimeout(evictionWithin).WithPolling(500 * time.Millisecond).Should(Succeed())
		for _, m := range members {
			Expect(k.PowerOn(nodes[m])).To(Succeed())
		}

		By("the nodes boot and finish the deletes; every PVC member comes back on its claim with its ID; " +
			"the memory member is replaced by a new one with a new ID")
		expectReplacedWithNewID(ctx, c, memNS, memName, memVictim.name, memIDs, memLoad)
		expectTotalLossNamed(ctx, c, lone)
		e2eutil.WaitPodsReplaced(ctx, c, ns, uids, 2*time.Minute)
		e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
		Expect(e2eutil.MemberIDs(ctx, c, ns, name)).To(Equal(ids))

		By("the drain proceeds once every voter is back: " + b + " is evicted and comes back on its claim with its ID")
		before := e2eutil.Pod(ctx, c, ns, b).UID
		Eventually(func() error { return evict(ctx, cs, ns, b) }).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		e2eutil.WaitPodsReplaced(ctx, c, ns, map[string]types.UID{b: before}, 2*time.Minute)
		e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
		load.StopAndCheck()
		Expect(e2eutil.MemberIDs(ctx, c, ns, name)).To(Equal(ids))
		e2eutil.ExpectKeysIn(ctx, fleet.Cluster(cluster).Config, c, ns, name, "k", 100)
	}, SpecTimeout(7*time.Minute))
})

const (
	// untilPowerOn is an outage the spec ends itself with PowerOn; the
	// kubelet boots the node at its end only should the spec fail first.
	untilPowerOn = 5 * time.Minute
	// evictionWithin: eviction comes NodeMonitorGracePeriod (and a
	// monitor period) plus the kubelet's 10 s tolerationSeconds cap after
	// the last beat; the rest is for a controller slowed by a loaded CI
	// machine. Only a failing spec waits it out.
	evictionWithin = sandbox.NodeMonitorGracePeriod + 10*time.Second + time.Minute
)

const (
	memNS, memName   = "outage-mem", "outmem"
	loneNS, loneName = "outage-lone", "outlone"
)

// evictee is a member whose Pod the outage is to evict.
type evictee struct {
	ns, name string
	uid      types.UID
}

// startMemoryBeside starts the outage spec's memory cluster once the PVC
// cluster's members run on pvcNodes (member to Node), which the outage
// powers off. The kubelet binds each Pod to the Node with the fewest Pods,
// so two members go to the Nodes that stay up and one beside a PVC member:
// that one is evicted, and the other two keep quorum.
func startMemoryBeside(ctx context.Context, c client.Client, pvcNodes map[string]string) (evictee, map[string]string) {
	GinkgoHelper()
	etcd, ids := startCluster(ctx, c, memNS, memName, true)
	etcd.Close()
	off := map[string]bool{}
	for _, n := range pvcNodes {
		off[n] = true
	}
	var lost []string
	for m := range ids {
		if off[e2eutil.PodNode(ctx, c, memNS, m)] {
			lost = append(lost, m)
		}
	}
	Expect(lost).To(HaveLen(1), "one memory member on a Node the outage powers off, two on the Nodes that stay up")
	return evictee{ns: memNS, name: lost[0], uid: e2eutil.Pod(ctx, c, memNS, lost[0]).UID}, ids
}

// startLoneMemory starts a one-member memory cluster on a PVC member's
// Node (required node affinity, which the sandbox honours), which the
// outage powers off. All its members are lost.
func startLoneMemory(ctx context.Context, c client.Client, pvcNodes map[string]string) evictee {
	GinkgoHelper()
	sb.Namespace(ctx, cluster, loneNS)
	ec := e2eutil.NewEtcdCluster(loneNS, loneName, 1, true)
	// On a PVC member's Node, which the outage powers off: the sandbox
	// binds by Pod counts otherwise, and a Pod left by an earlier spec
	// once sent it to a Node that stays up.
	ec.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn,
				Values: slices.Sorted(maps.Values(pvcNodes))}}}}}}}
	Expect(c.Create(ctx, ec)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(c.Delete(ctx, ec))).To(Succeed()) })
	e2eutil.WaitAvailable(ctx, c, loneNS, loneName, 2*time.Minute)
	m := e2eutil.FirstMember(ctx, c, loneNS, loneName)
	Expect(slices.Collect(maps.Values(pvcNodes))).To(ContainElement(e2eutil.PodNode(ctx, c, loneNS, m)),
		"the lone memory member runs on a Node the outage powers off")
	return evictee{ns: loneNS, name: m, uid: e2eutil.Pod(ctx, c, loneNS, m).UID}
}

// expectTotalLossNamed waits until the lone cluster, its only member
// evicted and its Pod gone with the boot, says QuorumLost and TotalLoss
// (RestoreNotEnabled: it did not opt in), and checks that its member is
// kept under its ID with no Pod running it again.
func expectTotalLossNamed(ctx context.Context, c client.Client, lone evictee) {
	GinkgoHelper()
	id := e2eutil.MemberIDs(ctx, c, loneNS, loneName)[lone.name]
	Eventually(func(g Gomega) {
		ec := &v1alpha1.EtcdCluster{}
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: loneNS, Name: loneName}, ec)).To(Succeed())
		a := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionAvailable)
		g.Expect(a).NotTo(BeNil())
		g.Expect(a.Reason).To(Equal(v1alpha1.ReasonQuorumLost))
		tl := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionTotalLoss)
		g.Expect(tl).NotTo(BeNil(), "total loss is named")
		g.Expect(tl.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(tl.Reason).To(Equal(v1alpha1.ReasonRestoreNotEnabled))
	}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	members := e2eutil.Members(ctx, c, loneNS, loneName)
	Expect(members).To(HaveKey(lone.name))
	Expect(members[lone.name].Status.MemberID).To(Equal(id))
	err := c.Get(ctx, types.NamespacedName{Namespace: loneNS, Name: lone.name}, &corev1.Pod{})
	Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no Pod runs the member again under its old ID: %v", err)
}

// evict asks for the eviction of Pod ns/name as `kubectl drain` does.
func evict(ctx context.Context, cs kubernetes.Interface, ns, name string) error {
	return cs.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
}

// waitDisruptionsAllowed waits until the disruption controller has
// computed the cluster's voter PDB to allow n disruptions.
func waitDisruptionsAllowed(ctx context.Context, cs kubernetes.Interface, ns, name string, n int32) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		pdb, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pdb.Status.ObservedGeneration).To(Equal(pdb.Generation))
		g.Expect(pdb.Status.DisruptionsAllowed).To(Equal(n), "healthy %d of %d expected", pdb.Status.CurrentHealthy, pdb.Status.ExpectedPods)
	}).WithTimeout(sandbox.NodeMonitorGracePeriod + 30*time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
}
