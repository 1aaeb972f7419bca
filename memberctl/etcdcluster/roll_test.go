package etcdcluster

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

// Rolling a version change into the running members. The harness plays
// the member reconciler: a member whose spec.version changed restarts
// (not Ready), then reports the new version from etcd and is Ready again.
var _ = Describe("version roll", func() {
	var h *harness
	ctx := context.Background()
	BeforeEach(func() { h = newHarness() })

	report := func(version string) {
		GinkgoHelper()
		for _, m := range h.members() {
			h.setMemberStatus(&m, func(s *v1alpha1.EtcdMemberStatus) { s.Version = version })
		}
	}
	setVersion := func(ec *v1alpha1.EtcdCluster, v string) {
		GinkgoHelper()
		cur := h.get(ec)
		cur.Spec.Version = v
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
	}
	// onVersion names the members whose spec.version is v, oldest first.
	onVersion := func(v string) []string {
		GinkgoHelper()
		var out []string
		for _, m := range h.members() {
			if m.Spec.Version == v {
				out = append(out, m.Name)
			}
		}
		return out
	}
	// restart plays the member reconciler restarting a member at its
	// spec.version: first not Ready, then Ready and reporting it.
	restart := func(ec *v1alpha1.EtcdCluster, name string) {
		GinkgoHelper()
		for _, m := range h.members() {
			if m.Name != name {
				continue
			}
			h.setReady(&m, false)
			h.reconcile(ec)
			Expect(onVersion("3.7.3")).To(ContainElement(name))
			h.setMemberStatus(&m, func(s *v1alpha1.EtcdMemberStatus) {
				s.Version = m.Spec.Version
				apimeta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady,
					Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonPodReady, Message: "pod is ready"})
			})
			return
		}
		Fail("no member " + name)
	}
	progressing := func(ec *v1alpha1.EtcdCluster) metav1.Condition {
		GinkgoHelper()
		c := apimeta.FindStatusCondition(h.get(ec).Status.Conditions, v1alpha1.ConditionProgressing)
		Expect(c).NotTo(BeNil())
		return *c
	}

	It("rolls one member at a time, followers first, the leader last after moving leadership", func() {
		ec := h.newCluster(3)
		h.converge(ec, 3)
		report("3.6.16")
		// a leads (the fake's leader is its first voter); b and c follow,
		// oldest first as the reconciler orders them.
		var a, b, c string
		for _, m := range h.members() {
			switch {
			case mustID(&m) == h.etcd.Leader():
				a = m.Name
			case b == "":
				b = m.Name
			default:
				c = m.Name
			}
		}

		setVersion(ec, "3.7.3")
		h.reconcile(ec)
		Expect(onVersion("3.7.3")).To(Equal([]string{b}), "the oldest follower first")
		h.reconcile(ec)
		Expect(onVersion("3.7.3")).To(Equal([]string{b}), "one at a time: the next waits for this one to run 3.7.3")
		p := progressing(ec)
		Expect(p.Reason).To(Equal(v1alpha1.ReasonUpgrading))
		Expect(p.Message).To(Equal("0/3 members on etcd 3.7.3; waiting for member " + b + " to run etcd 3.7.3"))

		restart(ec, b)
		h.reconcile(ec)
		Expect(onVersion("3.7.3")).To(Equal([]string{b, c}))
		Expect(progressing(ec).Message).To(HavePrefix("1/3 members on etcd 3.7.3; "))

		restart(ec, c)
		h.reconcile(ec)
		Expect(onVersion("3.7.3")).To(Equal([]string{b, c}), "the leader is not rolled while it leads")
		Expect(callsLike(h.etcd.Calls(), "MoveLeader")).To(HaveLen(1))
		Expect(h.etcd.Leader()).To(Equal(mustID(h.memberNamed(b))), "leadership moved to the oldest member on 3.7.3")
		h.reconcile(ec)
		Expect(onVersion("3.7.3")).To(ConsistOf(a, b, c), "the former leader, now a follower, goes last")

		restart(ec, a)
		h.reconcile(ec)
		cur := h.get(ec)
		Expect(cur.Status.Versions).To(Equal([]v1alpha1.EtcdClusterVersionCount{{Version: "3.7.3", Members: 3}}))
		Expect(progressing(ec).Reason).To(Equal(v1alpha1.ReasonReconciled))
		Expect(conditionStatus(cur, v1alpha1.ConditionVersionDrifted)).To(Equal(metav1.ConditionFalse))
		var order []string
		for _, e := range h.events.All() {
			for _, r := range []string{"RollingMember", "LeaderMoved", "Upgraded"} {
				if len(callsLike([]string{e}, "Normal "+r+" ")) == 1 {
					order = append(order, r)
				}
			}
		}
		Expect(order).To(Equal([]string{"RollingMember", "RollingMember", "LeaderMoved", "RollingMember", "Upgraded"}))
		Expect(callsLike(h.events.All(), "Normal RollingMember Rolling follower "+b+" from etcd 3.6.16 to 3.7.3: 0/3 members on etcd 3.7.3")).To(HaveLen(1))
		Expect(h.members()).To(HaveLen(3), "no member was added or removed")
	})

	It("never rolls a single memory member (it would lose every key), and rolls a single PVC member in place", func() {
		mem := &v1alpha1.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "ec", Namespace: h.ns},
			Spec: v1alpha1.EtcdClusterSpec{Replicas: ptr.To(int32(1)), Version: "3.6.16",
				Storage: v1alpha1.StorageSpec{Medium: v1alpha1.StorageMediumMemory, Size: resource.MustParse("64Mi")}},
		}
		Expect(k8sClient.Create(ctx, mem)).To(Succeed())
		h.converge(mem, 1)
		report("3.6.16")
		setVersion(mem, "3.7.3")
		h.reconcile(mem)
		h.reconcile(mem)
		Expect(onVersion("3.7.3")).To(BeEmpty())
		Expect(progressing(mem).Message).To(ContainSubstring("held: a memory-backed member is replaced with a new ID"))

		By("a PVC cluster of one member")
		other := newHarness()
		h = other
		pvc := h.newCluster(1)
		h.converge(pvc, 1)
		report("3.6.16")
		setVersion(pvc, "3.7.3")
		h.reconcile(pvc)
		Expect(onVersion("3.7.3")).To(HaveLen(1), "the only way to change its version; it is unavailable while it restarts")
	})

	It("rolls nothing while a member is not Ready, a member is being replaced, or the cluster is paused", func() {
		ec := h.newCluster(3)
		h.converge(ec, 3)
		report("3.6.16")
		ms := h.members()
		setVersion(ec, "3.7.3")

		By("a member not Ready")
		h.setReady(&ms[2], false)
		h.reconcile(ec)
		Expect(onVersion("3.7.3")).To(BeEmpty())
		h.setReady(&ms[2], true)

		By("a replacement in flight")
		cur := h.get(ec)
		cur.Status.Replacing = &v1alpha1.ReplacementLease{Member: ms[2].Name, MemberUID: ms[2].UID,
			Action: "CrashLoopReplace", Since: metav1.Now()}
		Expect(k8sClient.Status().Update(ctx, cur)).To(Succeed())
		h.setReady(&ms[2], false) // the lease is held until it is gone or back
		h.reconcile(ec)
		Expect(onVersion("3.7.3")).To(BeEmpty())
		h.setReady(&ms[2], true)
		h.reconcile(ec) // releases the lease: the member is back and Ready
		Expect(h.get(ec).Status.Replacing).To(BeNil())
		Expect(onVersion("3.7.3")).To(BeEmpty(), "the lease was still held when the step was decided")

		By("paused")
		cl, err := h.r.Clusters.Cluster(ctx, "")
		Expect(err).NotTo(HaveOccurred())
		cl.Paused = func() bool { return true }
		h.reconcile(ec)
		Expect(onVersion("3.7.3")).To(BeEmpty())
		Expect(progressing(ec).Message).To(ContainSubstring("held: destructive actions are paused"))

		cl.Paused = nil
		h.reconcile(ec)
		Expect(onVersion("3.7.3")).To(HaveLen(1))
	})

	It("downgrades one minor through etcd's downgrade API: validate and enable first, no member before every storage is on the lower minor, cancelled when spec.version goes back", func() {
		ec := h.newCluster(3)
		h.converge(ec, 3)
		for _, m := range h.members() {
			m.Spec.Version = "3.7.3"
			Expect(k8sClient.Update(ctx, &m)).To(Succeed())
		}
		setVersion(ec, "3.7.3")
		report("3.7.3")
		h.reconcile(ec)
		h.etcd.HoldStorage()

		setVersion(ec, "3.6.16")
		h.reconcile(ec)
		h.reconcile(ec)
		Expect(callsLike(h.etcd.Calls(), "Downgrade")).To(Equal([]string{"Downgrade Validate 3.6", "Downgrade Enable 3.6"}))
		Expect(onVersion("3.6.16")).To(BeEmpty(), "no member runs 3.6 before etcd moved every member's storage to 3.6")
		Expect(conditionStatus(h.get(ec), v1alpha1.ConditionDowngradeEnabled)).To(Equal(metav1.ConditionTrue))
		Expect(conditionStatus(h.get(ec), v1alpha1.ConditionUpgradeBlocked)).To(Equal(metav1.ConditionFalse))
		Expect(progressing(ec).Message).To(ContainSubstring("waiting for etcd to move member"))
		Expect(callsLike(h.events.All(), "Normal DowngradeEnabled ")).To(HaveLen(1))

		for _, m := range h.members() {
			h.etcd.SetStorageVersion(m.Name, "3.6.0")
		}
		h.reconcile(ec)
		Expect(onVersion("3.6.16")).To(HaveLen(1), "storage on 3.6: the first follower rolls")
		Expect(callsLike(h.etcd.Calls(), "Downgrade Enable")).To(HaveLen(1), "enabled once")

		By("spec.version back to 3.7.3: the downgrade is cancelled and the condition goes")
		setVersion(ec, "3.7.3")
		h.reconcile(ec)
		Expect(callsLike(h.etcd.Calls(), "Downgrade Cancel")).To(Equal([]string{"Downgrade Cancel 3.6"}))
		Expect(h.etcd.DowngradeTarget()).To(BeEmpty())
		h.reconcile(ec)
		Expect(apimeta.FindStatusCondition(h.get(ec).Status.Conditions, v1alpha1.ConditionDowngradeEnabled)).To(BeNil())
	})

	It("takes its first step only with a place in the fleet's rollout, keeps it to the end, then gives it back", func() {
		ec := h.newCluster(3)
		h.converge(ec, 3)
		report("3.6.16")
		cl, err := h.r.Clusters.Cluster(ctx, "")
		Expect(err).NotTo(HaveOccurred())
		wave := &fakeRollouts{}
		cl.Rollouts = wave
		setVersion(ec, "3.7.3")

		By("no place: nothing is touched, and InRollout says what the roll waits for")
		h.reconcile(ec)
		Expect(onVersion("3.7.3")).To(BeEmpty())
		c := apimeta.FindStatusCondition(h.get(ec).Status.Conditions, v1alpha1.ConditionInRollout)
		Expect(c).NotTo(BeNil())
		Expect(c.Status).To(Equal(metav1.ConditionFalse))
		Expect(c.Reason).To(Equal(v1alpha1.ReasonWaitingForPlace))
		Expect(c.Message).To(Equal(fakeWaveFull))
		h.reconcile(ec)
		Expect(onVersion("3.7.3")).To(BeEmpty())
		Expect(progressing(ec).Message).To(ContainSubstring("waiting: " + fakeWaveFull))

		By("a place: the first member rolls, and the place is held across steps even when the wave is full")
		wave.free = true
		h.reconcile(ec)
		Expect(onVersion("3.7.3")).To(HaveLen(1))
		Expect(conditionStatus(h.get(ec), v1alpha1.ConditionInRollout)).To(Equal(metav1.ConditionTrue))
		wave.free = false
		for range 3 {
			h.reconcile(ec) // the roll waits for its member, and renews its place
			name := onVersion("3.7.3")[len(onVersion("3.7.3"))-1]
			restart(ec, name)
			h.reconcile(ec)
			h.reconcile(ec)
			if len(onVersion("3.7.3")) == 3 {
				break
			}
		}
		Expect(onVersion("3.7.3")).To(HaveLen(3))
		last := wave.joins[len(wave.joins)-1]
		Expect(last.Started).To(BeTrue())
		Expect(last.Done).To(BeNumerically(">=", 2), "each renewal reports the members on target")

		By("once every member runs 3.7.3 the place is given back")
		for _, m := range h.members() {
			h.setMemberStatus(&m, func(s *v1alpha1.EtcdMemberStatus) {
				s.Version = "3.7.3"
				apimeta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady,
					Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonPodReady, Message: "pod is ready"})
			})
		}
		h.reconcile(ec)
		h.reconcile(ec)
		Expect(apimeta.FindStatusCondition(h.get(ec).Status.Conditions, v1alpha1.ConditionInRollout)).To(BeNil())
		Expect(wave.left).To(HaveLen(1))
	})
})

const fakeWaveFull = "waiting for a place in the fleet's rollout: test"

// fakeRollouts gives a place when free, and always to a started roll (as
// limiter.Rollouts does), recording each ask.
type fakeRollouts struct {
	free  bool
	joins []gate.Roll
	left  []gate.Roll
}

func (f *fakeRollouts) Join(_ context.Context, r gate.Roll) gate.Decision {
	f.joins = append(f.joins, r)
	if f.free || r.Started {
		return gate.Decision{Cancel: func() {}}
	}
	return gate.Decision{Delay: time.Second, Reason: fakeWaveFull, Cancel: func() {}}
}

func (f *fakeRollouts) Leave(r gate.Roll) { f.left = append(f.left, r) }
