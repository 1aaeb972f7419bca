package memberctl_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/e2e/lincheck"
)

// A rolling version upgrade with real etcd of both versions: the sandbox
// kubelet runs etcd 3.6.16 for a v3.6.16 image and 3.7.3 for v3.7.3
// (test/tools/assets.sh builds both).
var _ = Describe("rolling version upgrade", func() {
	const cluster = "pf"

	It("rolls a PVC cluster 3.6.16 → 3.7.3 one member at a time, the leader last, then a quota raise and a resources change the same way, then back to 3.6.16 through etcd's downgrade API: IDs kept, every write kept, quorum Ready throughout", func(ctx SpecContext) {
		ids, log := upgrade(ctx, cluster, "upgrade-pvc", "uppvc", false)
		Expect(e2eutil.MemberIDs(ctx, clients[cluster], "upgrade-pvc", "uppvc")).To(Equal(ids), "a PVC member keeps its ID")
		Expect(log.Count(watch.Deleted)).To(HaveLen(3), "each Pod was recreated, under its member's name")
		// Events reach the apiserver asynchronously, a moment after the
		// status. (Not checked on the memory cluster: its roll records more
		// Events on the EtcdCluster than client-go's spam filter passes, 25
		// per object, so the last ones are dropped.)
		Eventually(func(g Gomega) {
			g.Expect(sb.EventMessages(ctx, cluster, "upgrade-pvc", "uppvc", "RollingMember")).To(HaveLen(3), "one member at a time")
			g.Expect(sb.EventMessages(ctx, cluster, "upgrade-pvc", "uppvc", "LeaderMoved")).To(HaveLen(1), "the leader went last, after moving leadership")
			g.Expect(sb.EventMessages(ctx, cluster, "upgrade-pvc", "uppvc", "Upgraded")).To(HaveLen(1))
		}).WithContext(ctx).WithTimeout(10 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

		// The same cluster, re-templated: a rolling re-template takes the
		// same path as the version roll, so it needs no cluster of its own.
		retemplate(ctx, cluster, "upgrade-pvc", "uppvc", 100)

		By("downgrading it back to 3.6.16 through etcd's downgrade API")
		log = downgrade(ctx, cluster, "upgrade-pvc", "uppvc")
		Expect(e2eutil.MemberIDs(ctx, clients[cluster], "upgrade-pvc", "uppvc")).To(Equal(ids), "a PVC member keeps its ID through the downgrade too")
		Expect(log.Count(watch.Deleted)).To(HaveLen(3), "each Pod was recreated once")
	}, SpecTimeout(10*time.Minute))

	It("rolls a memory cluster 3.6.16 → 3.7.3 by replacing one member at a time with a new ID, only while quorum holds, and refuses to take it back down a minor, touching nothing", func(ctx SpecContext) {
		const ns, name = "upgrade-mem", "upmem"
		ids, _ := upgrade(ctx, cluster, ns, name, true)
		now := e2eutil.MemberIDs(ctx, clients[cluster], ns, name)
		Expect(now).To(HaveLen(3))
		for n, id := range now {
			Expect(ids).NotTo(HaveKey(n), "member %s was replaced", n)
			Expect(id).NotTo(BeElementOf(slices.Collect(maps.Values(ids))), "the new member %s has a new ID", n)
		}

		By("asking for 3.6.16 again: etcd cannot add a 3.6 member while a downgrade is enabled, and a memory member cannot restart on its data")
		refuseMemoryDowngrade(ctx, cluster, ns, name, now)
	}, SpecTimeout(8*time.Minute))
})

// upgrade creates a 3-member cluster at 3.6.16, writes 100 keys, then
// rolls it to 3.7.3 (rollVersion); it returns the member IDs from before
// the roll and the roll's Pod watch.
func upgrade(ctx context.Context, cluster, ns, name string, memory bool) (map[string]string, *e2eutil.PodLog) {
	GinkgoHelper()
	const from, to = "3.6.16", "3.7.3"
	c := clients[cluster]
	sb.Namespace(ctx, cluster, ns)
	ec := e2eutil.NewEtcdCluster(ns, name, 3, memory)
	ec.Spec.Version = from
	Expect(c.Create(ctx, ec)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(c.Delete(ctx, ec))).To(Succeed()) })
	e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
	cli := e2eutil.ConnectEtcd(ctx, fleet.Cluster(cluster).Config, c, ns, name)
	cli.PutKeys(ctx, "k", 100)
	cli.Close()
	ids := e2eutil.MemberIDs(ctx, c, ns, name)
	expectRunning(ctx, cluster, ns, name, from)
	return ids, rollVersion(ctx, cluster, ns, name, memory, to)
}

// rollVersion changes spec.version of a 3-member cluster holding keys
// k0..k99 to `to` under the client workload and waits until the cluster
// reports every member on it and Reconciled. It checks the workload's
// history, every key, the versions against etcd, and that a quorum of
// member Pods was Ready at every instant the apiserver reported; it
// returns the Pod watch.
func rollVersion(ctx context.Context, cluster, ns, name string, memory bool, to string) *e2eutil.PodLog {
	GinkgoHelper()
	c := clients[cluster]
	log, err := e2eutil.WatchPods(ctx, fleet.Cluster(cluster).Clientset, ns)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(log.Stop)
	ready := log.ReadyAtStart()
	load := lincheck.StartIn(ctx, sb, cluster, ns, name)
	stopFollowing := func() {}
	if memory {
		// Every member is replaced under a new name: keep the clients on
		// the members that exist, as a client following the membership would.
		stopFollowing = load.FollowMembers(ctx, c, ns, name)
	}

	By("changing spec.version to " + to)
	cur := &v1alpha1.EtcdCluster{}
	Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cur)).To(Succeed())
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Spec.Version = to
	Expect(c.Patch(ctx, cur, patch)).To(Succeed())

	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cur)).To(Succeed())
		g.Expect(cur.Status.Versions).To(Equal([]v1alpha1.EtcdClusterVersionCount{{Version: to, Members: 3}}))
		p := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionProgressing)
		g.Expect(p).NotTo(BeNil())
		g.Expect(p.Reason).To(Equal(v1alpha1.ReasonReconciled), "progressing: %s", p.Message)
		g.Expect(e2eutil.Available(cur)).To(BeTrue())
	}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	stopFollowing()
	load.StopAndCheck()

	By("every key is there, and etcd itself says " + to)
	cli := e2eutil.ConnectEtcd(ctx, fleet.Cluster(cluster).Config, c, ns, name)
	defer cli.Close()
	cli.ExpectKeys(ctx, "k", 100)
	expectRunning(ctx, cluster, ns, name, to)

	By("never fewer than a quorum of member Pods Ready, as the apiserver reported them")
	expectQuorumReady(ready, log.Events(), 2)
	return log
}

// downgrade rolls a PVC cluster back to 3.6.16 (rollVersion) and checks
// that it went through etcd's downgrade API, which etcd ended by itself.
func downgrade(ctx context.Context, cluster, ns, name string) *e2eutil.PodLog {
	GinkgoHelper()
	log := rollVersion(ctx, cluster, ns, name, false, "3.6.16")
	c := clients[cluster]
	Eventually(func(g Gomega) {
		g.Expect(sb.EventMessages(ctx, cluster, ns, name, "DowngradeEnabled")).To(HaveLen(1), "etcd's downgrade enabled once, before the first member")
		ec := &v1alpha1.EtcdCluster{}
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ec)).To(Succeed())
		g.Expect(meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionDowngradeEnabled)).To(BeNil(),
			"etcd ends the downgrade once every member runs 3.6, and the condition goes")
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	return log
}

// refuseMemoryDowngrade sets spec.version of a memory cluster running 3.7.3
// to 3.6.16 and checks that UpgradeBlocked says why, that etcd's downgrade
// is never enabled and that no Pod or member changes; then it sets 3.7.3
// back and the refusal clears.
func refuseMemoryDowngrade(ctx context.Context, cluster, ns, name string, ids map[string]string) {
	GinkgoHelper()
	c := clients[cluster]
	log, err := e2eutil.WatchPods(ctx, fleet.Cluster(cluster).Clientset, ns)
	Expect(err).NotTo(HaveOccurred())
	defer log.Stop()
	setSpecVersion := func(v string) {
		ec := &v1alpha1.EtcdCluster{}
		Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ec)).To(Succeed())
		patch := client.MergeFrom(ec.DeepCopy())
		ec.Spec.Version = v
		Expect(c.Patch(ctx, ec, patch)).To(Succeed())
	}
	blocked := func(g Gomega) *metav1.Condition {
		ec := &v1alpha1.EtcdCluster{}
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ec)).To(Succeed())
		g.Expect(meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionDowngradeEnabled)).To(BeNil(), "etcd's downgrade is never enabled")
		cond := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionUpgradeBlocked)
		g.Expect(cond).NotTo(BeNil())
		return cond
	}
	setSpecVersion("3.6.16")
	Eventually(func(g Gomega) {
		cond := blocked(g)
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(cond.Message).To(ContainSubstring("a memory-backed cluster cannot go down a minor version"))
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	// Long enough for a roll that was going to start to have started: the
	// version roll above took its first step within a few seconds.
	Consistently(func(g Gomega) {
		g.Expect(blocked(g).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(log.Count(watch.Deleted)).To(BeEmpty(), "no Pod is deleted")
	}).WithContext(ctx).WithTimeout(10 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	Expect(sb.EventMessages(ctx, cluster, ns, name, "DowngradeEnabled")).To(BeEmpty())
	expectRunning(ctx, cluster, ns, name, "3.7.3")
	Expect(e2eutil.MemberIDs(ctx, c, ns, name)).To(Equal(ids), "no member changed")

	By("setting 3.7.3 back clears the refusal")
	setSpecVersion("3.7.3")
	Eventually(func(g Gomega) {
		g.Expect(blocked(g).Status).To(Equal(metav1.ConditionFalse))
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// expectRunning checks, against etcd itself, that every member runs
// version, and that the EtcdCluster's status.versions and each member's
// status.version say so.
func expectRunning(ctx context.Context, cluster, ns, name, version string) {
	GinkgoHelper()
	c := clients[cluster]
	members := e2eutil.Members(ctx, c, ns, name)
	// A client of the members that run now (a memory cluster's are new).
	cli := e2eutil.ConnectEtcd(ctx, fleet.Cluster(cluster).Config, c, ns, name)
	defer cli.Close()
	Eventually(func(g Gomega) {
		for n := range members {
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			st, err := cli.Status(cctx, etcd.ClientURL(ns, name, n, false))
			cancel()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st.Version).To(Equal(version), "etcd of member %s", n)
		}
		ec := &v1alpha1.EtcdCluster{}
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ec)).To(Succeed())
		g.Expect(ec.Status.Versions).To(Equal([]v1alpha1.EtcdClusterVersionCount{{Version: version, Members: int32(len(members))}}))
		for n, m := range e2eutil.Members(ctx, c, ns, name) {
			g.Expect(m.Status.Version).To(Equal(version), "status.version of member %s", n)
		}
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
}

// expectQuorumReady replays the Pod watch from the readiness at its start
// and fails at the first instant fewer than quorum Pods were Ready.
func expectQuorumReady(ready map[string]bool, events []e2eutil.PodEvent, quorum int) {
	GinkgoHelper()
	count := func() (int, string) {
		n, names := 0, []string{}
		for p, r := range ready {
			if r {
				n++
				names = append(names, p)
			}
		}
		sort.Strings(names)
		return n, fmt.Sprint(names)
	}
	for _, e := range events {
		ready[e.Name] = e.Type != watch.Deleted && e.Ready
		n, names := count()
		Expect(n).To(BeNumerically(">=", quorum), "at %s (%s %s) only %s were Ready", e.At.Format(time.RFC3339Nano), e.Type, e.Name, names)
	}
}
