package faults_test

import (
	"context"
	"sync"
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
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/e2e/lincheck"
)

// Replacement safety on real etcd, in the "faults" cluster: no member is
// removed on a guess, removals are one at a time and never cost quorum,
// and a deterministic pod-loss loop is capped on the EtcdCluster.
var _ = Describe("replacement safety", Ordered, func() {
	const cluster = "faults"
	var c client.WithWatch
	BeforeAll(func() { c = clients[cluster] })

	It("replaces two crash-looping members one at a time, never at the cost of quorum", func(ctx SpecContext) {
		const ns, name = "twoloops", "tl"
		sb.Namespace(ctx, cluster, ns)
		Expect(c.Create(ctx, e2eutil.NewEtcdCluster(ns, name, 5, false))).To(Succeed())
		e2eutil.WaitAvailable(ctx, c, ns, name, 3*time.Minute)
		putKeys(ctx, ns, name)
		load := lincheck.StartIn(ctx, sb, cluster, ns, name)
		removals := watchRemovals(ctx, c, ns)
		defer removals.stop()
		names := e2eutil.MemberNames(ctx, c, ns, name)

		stop := crashLoop(fleet.Cluster(cluster).Kubelet, ns, names[:2]...)
		defer stop()
		Eventually(func() []string { return removals.members() }).WithTimeout(4 * time.Minute).WithPolling(time.Second).
			Should(ConsistOf(names[0], names[1]))
		stop()
		e2eutil.WaitAvailable(ctx, c, ns, name, 3*time.Minute)
		load.StopAndCheck()
		for _, r := range removals.all() {
			Expect(r.othersDeleting).To(BeZero(), "member %s was removed while another removal was in flight", r.member)
			Expect(etcd.HasQuorum(r.readyOthers, r.voters)).To(BeTrue(),
				"removing %s left %d ready of %d voters", r.member, r.readyOthers, r.voters)
		}
		expectKeys(ctx, ns, name)
	}, SpecTimeout(9*time.Minute))

	It("removes nothing when a memory member's Pod only drops out of the cache", func(ctx SpecContext) {
		const ns, name = "relabel", "rl"
		sb.Namespace(ctx, cluster, ns)
		Expect(c.Create(ctx, e2eutil.NewEtcdCluster(ns, name, 3, true))).To(Succeed())
		e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
		putKeys(ctx, ns, name)
		load := lincheck.StartIn(ctx, sb, cluster, ns, name)
		removals := watchRemovals(ctx, c, ns)
		defer removals.stop()
		victim := e2eutil.FirstMember(ctx, c, ns, name)
		uid := e2eutil.Pod(ctx, c, ns, victim).UID

		setPodLabel(ctx, c, ns, victim, v1alpha1.LabelManagedBy, "someone-else") // the operator's cache filters on it
		Eventually(func() string { return readyMessage(getMember(ctx, c, ns, victim)) }).WithTimeout(time.Minute).
			Should(ContainSubstring("still exists although the cache does not list it"))
		Consistently(func() []string { return removals.members() }).WithTimeout(10 * time.Second).Should(BeEmpty())
		Expect(e2eutil.Pod(ctx, c, ns, victim).UID).To(Equal(uid))

		setPodLabel(ctx, c, ns, victim, v1alpha1.LabelManagedBy, v1alpha1.ManagedByValue)
		e2eutil.WaitAvailable(ctx, c, ns, name, time.Minute)
		load.StopAndCheck()
		Expect(removals.members()).To(BeEmpty())
		expectKeys(ctx, ns, name)
	}, SpecTimeout(4*time.Minute))

	It("caps a deterministic pod-loss loop on the EtcdCluster, with ReplacementsExhausted and an Event", func(ctx SpecContext) {
		const ns, name = "lossloop", "ll"
		sb.Namespace(ctx, cluster, ns)
		Expect(c.Create(ctx, e2eutil.NewEtcdCluster(ns, name, 3, true))).To(Succeed())
		e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
		putKeys(ctx, ns, name)
		load := lincheck.StartIn(ctx, sb, cluster, ns, name)
		k := fleet.Cluster(cluster).Kubelet
		setAdmission := func(fail bool) {
			for _, n := range k.NodeNames() {
				Expect(k.FailAdmission(n, fail)).To(Succeed())
			}
		}
		setAdmission(true)
		defer setAdmission(false)
		// Every new member's Pod now fails admission, its memory member is
		// lost with it and replaced by another new member: a loop.
		victim := e2eutil.FirstMember(ctx, c, ns, name)
		Expect(c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: victim}})).To(Succeed())

		var ec v1alpha1.EtcdCluster
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &ec)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(ec.Status.Conditions, v1alpha1.ConditionReplacementsExhausted)).To(BeTrue())
		}).WithTimeout(3 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		Expect(ec.Status.Replacement.CappedCount).To(BeEquivalentTo(5), "the default cap")
		Expect(ec.Status.Replacement.LastReason).To(Equal("PodLost"))
		sb.ExpectWarningEvent(ctx, cluster, ns, name, v1alpha1.ConditionReplacementsExhausted)
		total := ec.Status.Replacement.Total
		Consistently(func() int32 {
			Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &ec)).To(Succeed())
			return ec.Status.Replacement.Total
		}).WithTimeout(10*time.Second).Should(Equal(total), "no replacement while exhausted")
		expectKeys(ctx, ns, name) // the two original members still hold quorum

		By("healing with replace-now once admission works again")
		setAdmission(false)
		for _, m := range e2eutil.Members(ctx, c, ns, name) {
			if m.DeletionTimestamp == nil && !isReady(&m) {
				setAnnotation(ctx, c, ns, m.Name, "heal")
			}
		}
		e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
		load.StopAndCheck()
		expectKeys(ctx, ns, name)
	}, SpecTimeout(6*time.Minute))
})

const keyPrefix, keyCount = "safety", 100

func putKeys(ctx context.Context, ns, name string) {
	GinkgoHelper()
	e := e2eutil.ConnectEtcd(ctx, fleet.Cluster("faults").Config, clients["faults"], ns, name)
	defer e.Close()
	e.PutKeys(ctx, keyPrefix, keyCount)
}

func expectKeys(ctx context.Context, ns, name string) {
	GinkgoHelper()
	e2eutil.ExpectKeysIn(ctx, fleet.Cluster("faults").Config, clients["faults"], ns, name, keyPrefix, keyCount)
}

func setPodLabel(ctx context.Context, c client.Client, ns, name, key, value string) {
	GinkgoHelper()
	p := e2eutil.Pod(ctx, c, ns, name)
	patch := client.MergeFrom(p.DeepCopy())
	p.Labels[key] = value
	Expect(c.Patch(ctx, p, patch)).To(Succeed())
}

func isReady(m *v1alpha1.EtcdMember) bool {
	return meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.ConditionReady)
}

func readyMessage(m *v1alpha1.EtcdMember) string {
	if cond := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.ConditionReady); cond != nil {
		return cond.Message
	}
	return ""
}

// removal is one EtcdMember deletion seen on the apiserver's watch, with
// the rest of the cluster as it stood at that moment.
type removal struct {
	member         string
	othersDeleting int // other members being deleted at the time
	voters         int // voters not being deleted, the removed one included
	readyOthers    int // ... of which Ready, the removed one excluded
}

// removalLog records every EtcdMember removal in a namespace.
type removalLog struct {
	mu       sync.Mutex
	removals []removal
	stop     func()
}

func watchRemovals(ctx context.Context, c client.WithWatch, ns string) *removalLog {
	GinkgoHelper()
	w, err := c.Watch(ctx, &v1alpha1.EtcdMemberList{}, client.InNamespace(ns))
	Expect(err).NotTo(HaveOccurred())
	l := &removalLog{}
	done := make(chan struct{})
	l.stop = func() { w.Stop(); <-done }
	go func() {
		defer close(done)
		seen := map[string]*v1alpha1.EtcdMember{}
		for ev := range w.ResultChan() {
			m, ok := ev.Object.(*v1alpha1.EtcdMember)
			if !ok {
				continue
			}
			if prev := seen[m.Name]; m.DeletionTimestamp != nil && (prev == nil || prev.DeletionTimestamp == nil) {
				l.record(seen, m)
			}
			seen[m.Name] = m
			if ev.Type == watch.Deleted {
				delete(seen, m.Name)
			}
		}
	}()
	return l
}

func (l *removalLog) record(seen map[string]*v1alpha1.EtcdMember, victim *v1alpha1.EtcdMember) {
	r := removal{member: victim.Name}
	if victim.Status.IsVoter {
		r.voters++
	}
	for name, m := range seen {
		switch {
		case name == victim.Name:
		case m.DeletionTimestamp != nil:
			r.othersDeleting++
		case m.Status.IsVoter:
			r.voters++
			if isReady(m) {
				r.readyOthers++
			}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.removals = append(l.removals, r)
}

func (l *removalLog) all() []removal {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]removal(nil), l.removals...)
}

func (l *removalLog) members() []string {
	var out []string
	for _, r := range l.all() {
		out = append(out, r.member)
	}
	return out
}
