package faults_test

import (
	"context"
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
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/e2e/lincheck"
	"github.com/etcdfleet/etcdfleet/test/sandbox/kubelet"
)

// The fault specs share the "faults" cluster and run in order.
var _ = Describe("faults", Ordered, func() {
	const cluster = "faults"
	var c client.Client
	BeforeAll(func() { c = clients[cluster] })

	It("backs off and then caps replacements of a Pod that fails admission; replace-now retries once", func(ctx SpecContext) {
		const ns, name = "admission", "adm"
		sb.Namespace(ctx, cluster, ns)
		Expect(c.Create(ctx, e2eutil.NewEtcdCluster(ns, name, 3, false))).To(Succeed())
		e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
		k := fleet.Cluster(cluster).Kubelet
		for _, n := range k.NodeNames() {
			Expect(k.FailAdmission(n, true)).To(Succeed())
		}
		log, err := e2eutil.WatchPods(ctx, fleet.Cluster(cluster).Clientset, ns)
		Expect(err).NotTo(HaveOccurred())
		defer log.Stop()
		load := lincheck.StartIn(ctx, sb, cluster, ns, name)
		victim := e2eutil.FirstMember(ctx, c, ns, name)
		Expect(c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: victim}})).To(Succeed())

		By("reaching the cap: ReplacementsExhausted and a Warning Event")
		Eventually(func(g Gomega) {
			m := getMember(ctx, c, ns, victim)
			g.Expect(meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.ConditionReplacementsExhausted)).To(BeTrue())
		}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		sb.ExpectWarningEvent(ctx, cluster, ns, victim, "ReplacementsExhausted")
		m := getMember(ctx, c, ns, victim)
		Expect(m.Status.Replacement.CappedCount).To(BeEquivalentTo(5))
		Expect(m.Status.Replacement.LastReason).To(Equal("UnexpectedAdmissionError"))

		By("creating no more Pods while exhausted")
		created := log.Count(watch.Added)[victim]
		Expect(created).To(BeNumerically("<=", 6), "1 recreate after the delete + 5 capped replacements")
		Consistently(func() int { return log.Count(watch.Added)[victim] }).WithTimeout(5 * time.Second).Should(Equal(created))

		By("retrying exactly once on replace-now")
		setAnnotation(ctx, c, ns, victim, "try-1")
		Eventually(func() int { return log.Count(watch.Added)[victim] }).WithTimeout(30 * time.Second).Should(Equal(created + 1))
		Consistently(func() int { return log.Count(watch.Added)[victim] }).WithTimeout(5 * time.Second).Should(Equal(created + 1))

		By("healing once admission works again and replace-now is set anew")
		for _, n := range k.NodeNames() {
			Expect(k.FailAdmission(n, false)).To(Succeed())
		}
		setAnnotation(ctx, c, ns, victim, "try-2")
		e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
		load.StopAndCheck()
	}, SpecTimeout(4*time.Minute))

	It("leaves the terminal Pod in place when the status write before the delete fails", func(ctx SpecContext) {
		const ns, name = "statusfail", "sf"
		sb.Namespace(ctx, cluster, ns)
		Expect(c.Create(ctx, e2eutil.NewEtcdCluster(ns, name, 1, false))).To(Succeed())
		e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
		sb.StopOperator(cluster)
		defer sb.StartOperator(cluster)
		m := e2eutil.FirstMember(ctx, c, ns, name)
		node := e2eutil.PodNode(ctx, c, ns, m)
		Expect(fleet.Cluster(cluster).Kubelet.RebootNode(ctx, node, kubelet.RebootOptions{})).To(Succeed())
		before := e2eutil.Pod(ctx, c, ns, m)
		Expect(before.Status.Phase).To(Equal(corev1.PodFailed))

		r, req := failingStatusReconciler(ctx, cluster, ns, m)
		_, err := r.Reconcile(ctx, "", req)
		Expect(err).To(MatchError(ContainSubstring("injected")))
		after := e2eutil.Pod(ctx, c, ns, m)
		Expect(after.UID).To(Equal(before.UID), "the Pod stays as the retry trigger")
		Expect(after.DeletionTimestamp).To(BeNil())
	}, SpecTimeout(3*time.Minute))

	It("heals a reboot that happened while the controller was stopped, deleting each Pod once", func(ctx SpecContext) {
		const ns, name = "offline", "off"
		sb.Namespace(ctx, cluster, ns)
		Expect(c.Create(ctx, e2eutil.NewEtcdCluster(ns, name, 3, false))).To(Succeed())
		e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
		etcd := e2eutil.ConnectEtcd(ctx, fleet.Cluster(cluster).Config, c, ns, name)
		etcd.PutKeys(ctx, "k", 100)
		etcd.Close()
		ids := e2eutil.MemberIDs(ctx, c, ns, name)
		log, err := e2eutil.WatchPods(ctx, fleet.Cluster(cluster).Clientset, ns)
		Expect(err).NotTo(HaveOccurred())
		defer log.Stop()
		uids := e2eutil.PodUIDs(ctx, c, ns, name)
		load := lincheck.StartIn(ctx, sb, cluster, ns, name)
		sb.StopOperator(cluster)
		Expect(fleet.Cluster(cluster).Reboot(ctx, kubelet.RebootOptions{Phase: kubelet.Alternate, Outage: time.Second})).To(Succeed())
		time.Sleep(2 * time.Second)
		sb.StartOperator(cluster)
		e2eutil.WaitPodsReplaced(ctx, c, ns, uids, 2*time.Minute)
		e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
		load.StopAndCheck()
		Expect(e2eutil.MemberIDs(ctx, c, ns, name)).To(Equal(ids))
		for n := range ids {
			Expect(log.Count(watch.Deleted)[n]).To(Equal(1), "Pod %s deleted exactly once", n)
		}
		e2eutil.ExpectKeysIn(ctx, fleet.Cluster(cluster).Config, c, ns, name, "k", 100)
	}, SpecTimeout(3*time.Minute))

	It("replaces a crash-looping member only while the others hold quorum", func(ctx SpecContext) {
		const ns, name = "crashloop", "cl"
		sb.Namespace(ctx, cluster, ns)
		Expect(c.Create(ctx, e2eutil.NewEtcdCluster(ns, name, 3, false))).To(Succeed())
		e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
		k := fleet.Cluster(cluster).Kubelet
		names := e2eutil.MemberNames(ctx, c, ns, name)
		load := lincheck.StartIn(ctx, sb, cluster, ns, name)

		By("two members crash-looping: quorum would not hold, so neither is replaced")
		stop := crashLoop(k, ns, names[:2]...)
		Consistently(func() int {
			n := 0
			for _, m := range e2eutil.Members(ctx, c, ns, name) {
				if m.DeletionTimestamp == nil {
					n++
				}
			}
			return n
		}).WithTimeout(20 * time.Second).WithPolling(500 * time.Millisecond).Should(Equal(3))
		stop()
		e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)

		By("one member crash-looping: the others hold quorum, so it is replaced by a new member")
		stop = crashLoop(k, ns, names[0])
		defer stop()
		Eventually(func() bool {
			_, ok := e2eutil.Members(ctx, c, ns, name)[names[0]]
			return ok
		}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(BeFalse())
		stop()
		e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
		Expect(e2eutil.Members(ctx, c, ns, name)).To(HaveLen(3))
		load.StopAndCheck()
	}, SpecTimeout(6*time.Minute))

	It("surfaces QuorumLost for a memory cluster after a reboot and never revives a member under its old ID", func(ctx SpecContext) {
		const ns, name = "memory", "mem"
		sb.Namespace(ctx, cluster, ns)
		Expect(c.Create(ctx, e2eutil.NewEtcdCluster(ns, name, 3, true))).To(Succeed())
		e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
		ids := e2eutil.MemberIDs(ctx, c, ns, name)
		Expect(fleet.Cluster(cluster).Reboot(ctx, kubelet.RebootOptions{Outage: time.Second})).To(Succeed())
		Eventually(func(g Gomega) {
			ec := &v1alpha1.EtcdCluster{}
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ec)).To(Succeed())
			cond := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionAvailable)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal(v1alpha1.ReasonQuorumLost))
		}).WithTimeout(time.Minute).Should(Succeed())
		Consistently(func(g Gomega) {
			for n := range ids {
				p := &corev1.Pod{}
				err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, p)
				if err == nil {
					g.Expect(p.Status.Phase).NotTo(Equal(corev1.PodRunning), "member %s revived on an empty tmpfs", n)
				}
			}
			// No successor either: one could only join a quorum, and the
			// old members keep their names and IDs, none revived.
			members := e2eutil.Members(ctx, c, ns, name)
			g.Expect(members).To(HaveLen(len(ids)))
			for n, m := range members {
				g.Expect(ids).To(HaveKeyWithValue(n, m.Status.MemberID), "member %s is one of the lost, with its ID", n)
			}
		}).WithTimeout(15 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	}, SpecTimeout(3*time.Minute))
})

// crashLoop keeps killing the named members' etcd until stop is called.
func crashLoop(k *kubelet.Kubelet, ns string, names ...string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			for _, n := range names {
				_ = k.Crash(ns, n)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return func() { cancel(); <-done }
}
