package etcdmember

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/datadirguard"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

// kind is one kind of replacement, set up on a fresh cluster: fault breaks
// member ec-0, done reports that its replacement was carried out, and
// record is where the replacement is counted.
type kind struct {
	medium v1alpha1.StorageMedium
	action gate.Action
	event  string
	fault  func(h *harness)
	done   func(h *harness) bool
	record func(h *harness) *v1alpha1.ReplacementStatus
}

var (
	terminalPodKind = kind{medium: "", action: gate.TerminalPodDelete, event: "ReplacingTerminalPod",
		fault:  func(h *harness) { h.setPod("ec-0", failed("UnexpectedAdmissionError")) },
		done:   func(h *harness) bool { return h.podReplaced("ec-0") },
		record: func(h *harness) *v1alpha1.ReplacementStatus { return h.member("ec-0").Status.Replacement },
	}
	crashLoopKind = kind{medium: "", action: gate.CrashLoopReplace, event: "ReplacingCrashLoopingMember",
		fault:  func(h *harness) { h.crashLoop("ec-0") },
		done:   func(h *harness) bool { return h.removing("ec-0") },
		record: func(h *harness) *v1alpha1.ReplacementStatus { return h.cluster().Status.Replacement },
	}
	podLossKind = kind{medium: v1alpha1.StorageMediumMemory, action: gate.PodLossReplace, event: "MemoryMemberLost",
		fault:  func(h *harness) { h.losePod("ec-0"); h.etcd.SetDown("ec-0", true) },
		done:   func(h *harness) bool { return h.removing("ec-0") },
		record: func(h *harness) *v1alpha1.ReplacementStatus { return h.cluster().Status.Replacement },
	}
)

var _ = Describe("the one replacement flow", func() {
	DescribeTable("waits for the shared gate and counts it as throttled, on every path",
		func(k kind) {
			h := newHarness(k.medium, 3)
			h.gate.delay = 1
			k.fault(h)
			before := throttledCount(h.ns)
			h.reconcile("ec-0")
			Expect(throttledCount(h.ns) - before).To(Equal(1.0))
			Expect(k.done(h)).To(BeFalse(), "nothing is replaced without a token")
			Expect(readyMessage(h.member("ec-0"))).To(ContainSubstring("waiting for the shared replacement rate limiter"))

			h.reconcile("ec-0")
			Expect(k.done(h)).To(BeTrue())
			Expect(h.gate.requests[len(h.gate.requests)-1].Action).To(Equal(k.action))
			Expect(throttledCount(h.ns) - before).To(Equal(1.0))
		},
		Entry("terminal Pod", terminalPodKind),
		Entry("crash loop", crashLoopKind),
		Entry("pod loss", podLossKind),
	)

	DescribeTable("counts a replacement once when its delete fails after the status write",
		func(k kind, restart bool) {
			h := newHarness(k.medium, 3)
			k.fault(h)
			h.cache.failDeletes = 1
			_, err := h.reconcileErr("ec-0")
			Expect(err).To(MatchError(ContainSubstring("injected")))
			Expect(k.done(h)).To(BeFalse())
			Expect(k.record(h).Total).To(Equal(int32(1)), "recorded before the delete")
			_, granted, canceled := h.gate.count()
			Expect(granted).To(Equal(1))
			Expect(canceled).To(BeZero(), "the token is spent once the replacement is recorded")

			first := h.gate
			if restart {
				h.restart() // the manager restarts between the status write and the delete
			}
			h.reconcile("ec-0")
			Expect(k.done(h)).To(BeTrue())
			Expect(k.record(h).Total).To(Equal(int32(1)), "no second Record")
			if restart {
				requests, _, _ := h.gate.count()
				Expect(requests).To(BeZero(), "no second token after a restart")
			} else {
				requests, granted, _ := first.count()
				Expect([]int{requests, granted}).To(Equal([]int{1, 1}), "no second token")
			}
			Expect(h.events.with(k.event)).To(HaveLen(1), "one Event")
		},
		Entry("terminal Pod, same reconciler", terminalPodKind, false),
		Entry("terminal Pod, manager restart", terminalPodKind, true),
		Entry("crash loop, same reconciler", crashLoopKind, false),
		Entry("crash loop, manager restart", crashLoopKind, true),
		Entry("pod loss, same reconciler", podLossKind, false),
		Entry("pod loss, manager restart", podLossKind, true),
	)
})

var _ = Describe("terminal-Pod replacement", func() {
	It("creates the successor Pod in the reconcile that deletes the terminal one, on the same claim with the same member ID, and leaves a cache that still holds the old Pod alone", func() {
		h := newHarness("", 3)
		before := h.member("ec-0")
		terminalPodKind.fault(h)
		old := h.pod("ec-0")
		h.reconcile("ec-0")

		p, m := h.pod("ec-0"), h.member("ec-0")
		Expect(p).NotTo(BeNil(), "created without waiting for the deletion to reach the cache")
		Expect(p.UID).NotTo(Equal(old.UID))
		Expect(m.Status.PodUID).To(Equal(p.UID))
		Expect(m.Status.Replacement.LastPodUID).To(Equal(old.UID))
		Expect(m.Status.MemberID).To(Equal(before.Status.MemberID), "the same member")
		Expect(p.Spec.Volumes).To(ContainElement(HaveField("VolumeSource.PersistentVolumeClaim.ClaimName", before.Status.PVCName)))
		Expect(h.events.with("ReplacingTerminalPod")).To(HaveLen(1))

		By("the next reconcile still reads the deleted Pod from the cache")
		h.cache.stalePodOnce = old
		requests, _, _ := h.gate.count()
		h.reconcile("ec-0")
		Expect(h.pod("ec-0").UID).To(Equal(p.UID), "the successor is not touched")
		again, _, _ := h.gate.count()
		Expect(again).To(Equal(requests), "no second token asked")
		Expect(h.member("ec-0").Status.Replacement.Total).To(Equal(int32(1)))
		Expect(h.events.with("ReplacingTerminalPod")).To(HaveLen(1))
	})

	It("waits for the deletion event when the terminal Pod outlives its delete", func() {
		h := newHarness("", 3)
		terminalPodKind.fault(h)
		old := h.pod("ec-0")
		old.Finalizers = append(old.Finalizers, "test.etcdfleet.io/hold")
		Expect(k8sClient.Update(context.Background(), old)).To(Succeed())
		h.reconcile("ec-0")
		p := h.pod("ec-0")
		Expect(p.UID).To(Equal(old.UID))
		Expect(p.DeletionTimestamp).NotTo(BeNil())

		p.Finalizers = nil
		Expect(k8sClient.Update(context.Background(), p)).To(Succeed())
		Eventually(func() *corev1.Pod { return h.pod("ec-0") }).Should(BeNil())
		h.reconcile("ec-0")
		Expect(h.pod("ec-0")).NotTo(BeNil(), "created by the reconcile its deletion brings")
		Expect(h.member("ec-0").Status.Replacement.Total).To(Equal(int32(1)))
	})
	It("tells the gate quorum is lost once a majority of the Pods is terminal, before the other members' statuses say so", func() {
		h := newHarness("", 3)
		h.setPod("ec-1", failed("Terminated"))
		h.setPod("ec-0", failed("Terminated"))
		h.reconcile("ec-0")
		Expect(isReady(h.member("ec-1"))).To(BeTrue(), "ec-1's own reconcile has not run yet")
		Expect(h.gate.requests).To(HaveLen(1))
		Expect(h.gate.requests[0].QuorumLost).To(BeTrue())
	})

	It("asks first only for the members that give a cluster back its quorum, counting those already on their way back", func() {
		h := newHarness("", 3)
		for _, n := range []string{"ec-0", "ec-1", "ec-2"} {
			h.setPod(n, failed("Terminated"))
		}
		h.reconcile("ec-1")
		Expect(h.podReplaced("ec-1")).To(BeTrue(), "granted, deleted and recreated")
		h.reconcile("ec-2")
		Expect(h.gate.requests).To(HaveLen(2))
		Expect(h.gate.requests[0].QuorumLost).To(BeTrue(), "none is up or coming: ec-1 restores quorum")
		Expect(h.gate.requests[1].QuorumLost).To(BeTrue(), "ec-1 alone coming back is no majority: ec-2 restores quorum")
		Expect(h.gate.requests[0].Quorum).To(Equal(&gate.QuorumView{Majority: 2}), "the gate is told what was counted")
		Expect(h.gate.requests[1].Quorum).To(Equal(&gate.QuorumView{Majority: 2, Counted: []string{"ec-1"}}),
			"the gate counts its own grants since by name, so ec-1 must be named")
		h.reconcile("ec-0")
		Expect(h.gate.requests).To(HaveLen(3))
		Expect(h.gate.requests[2].QuorumLost).To(BeFalse(), "ec-1 and ec-2 (granted) are a majority: ec-0 waits behind other clusters' quorum")

		By("a new Pod starting counts as coming back too")
		h2 := newHarness("", 3)
		for _, n := range []string{"ec-0", "ec-1", "ec-2"} {
			h2.setPod(n, failed("Terminated"))
		}
		for _, n := range []string{"ec-1", "ec-2"} {
			h2.reconcile(n) // deletes the terminal Pod
			h2.reconcile(n) // creates the new one
			Expect(h2.pod(n)).NotTo(BeNil())
			h2.setPod(n, running(false, 0))
			h2.reconcile(n)
		}
		h2.reconcile("ec-0")
		Expect(h2.gate.requests[len(h2.gate.requests)-1].QuorumLost).To(BeFalse())
	})

	It("tells the gate quorum holds while the other Pods run", func() {
		h := newHarness("", 3)
		h.setPod("ec-0", failed("Terminated"))
		h.reconcile("ec-0")
		Expect(h.gate.requests).To(HaveLen(1))
		Expect(h.gate.requests[0].QuorumLost).To(BeFalse())
	})
})

var _ = Describe("pod-loss replacement", func() {
	It("never recreates the Pod of a memory member under its old ID when the cached member predates its recorded Pod UID", func() {
		h := newHarness(v1alpha1.StorageMediumMemory, 3)
		stale := h.member("ec-0")
		stale.Status.PodUID = "" // as read before the Pod's UID was recorded
		h.cache.staleMember = stale
		h.losePod("ec-0")

		h.reconcile("ec-0")
		Expect(h.pod("ec-0")).To(BeNil(), "no Pod started on an empty tmpfs with the old member ID")
		Expect(h.removing("ec-0")).To(BeTrue(), "replaced by a new member with a new ID instead")
	})

	It("never recreates a Pod that vanished between two reads of one reconcile", func() {
		h := newHarness(v1alpha1.StorageMediumMemory, 3)
		h.cache.stalePodOnce = h.pod("ec-0") // read once as running, then gone
		h.losePod("ec-0")

		h.reconcile("ec-0")
		Expect(h.pod("ec-0")).To(BeNil(), "no Pod started on an empty tmpfs with the old member ID")
		h.reconcile("ec-0")
		Expect(h.pod("ec-0")).To(BeNil())
		Expect(h.removing("ec-0")).To(BeTrue(), "replaced by a new member with a new ID instead")
	})

	It("removes nothing when the Pod only dropped out of the label-filtered cache", func() {
		h := newHarness(v1alpha1.StorageMediumMemory, 3)
		p := h.pod("ec-0")
		delete(p.Labels, v1alpha1.LabelManagedBy) // the cache no longer lists it
		Expect(k8sClient.Update(context.Background(), p)).To(Succeed())

		h.reconcile("ec-0")
		Expect(h.removing("ec-0")).To(BeFalse())
		Expect(h.gate.requests).To(BeEmpty(), "no token asked for on a guess")
		Expect(h.cluster().Status.Replacement).To(BeNil(), "nothing counted")
		Expect(readyMessage(h.member("ec-0"))).To(ContainSubstring("still exists although the cache does not list it"))
	})

	It("tells the gate quorum holds when it does", func() {
		h := newHarness(v1alpha1.StorageMediumMemory, 3)
		podLossKind.fault(h)
		h.reconcile("ec-0")
		Expect(h.removing("ec-0")).To(BeTrue())
		Expect(h.gate.requests).To(HaveLen(1))
		Expect(h.gate.requests[0].QuorumLost).To(BeFalse())
	})

	It("removes a member whose cluster already lost quorum when it recovers from a survivor, and says so to the gate", func() {
		h := newHarness(v1alpha1.StorageMediumMemory, 3)
		ec := h.cluster()
		ec.Spec.Recovery = &v1alpha1.RecoverySpec{QuorumLoss: v1alpha1.QuorumLossFromSurvivor}
		Expect(k8sClient.Update(context.Background(), ec)).To(Succeed())
		podLossKind.fault(h)
		h.etcd.SetDown("ec-1", true)
		h.reconcile("ec-0")
		Expect(h.removing("ec-0")).To(BeTrue())
		Expect(h.gate.requests).To(HaveLen(1))
		Expect(h.gate.requests[0].QuorumLost).To(BeTrue())
	})

	It("touches nothing in a cluster without quorum under the default quorumLoss Manual, and replaces the member once quorum is back", func() {
		h := newHarness(v1alpha1.StorageMediumMemory, 3)
		podLossKind.fault(h)
		h.etcd.SetDown("ec-1", true)
		h.reconcile("ec-0")
		Expect(h.removing("ec-0")).To(BeFalse(), "no deletion mark until a person acts")
		Expect(h.member("ec-0").Finalizers).NotTo(BeEmpty())
		Expect(h.gate.requests).To(BeEmpty(), "no token asked for")
		Expect(h.cluster().Status.Replacement).To(BeNil(), "nothing counted")
		Expect(h.cluster().Status.Replacing).To(BeNil(), "no lease taken")
		Expect(readyMessage(h.member("ec-0"))).To(ContainSubstring("spec.recovery.quorumLoss is Manual"))

		h.etcd.SetDown("ec-1", false) // quorum is back without it
		h.reconcile("ec-0")
		Expect(h.removing("ec-0")).To(BeTrue())
	})

	It("does not ask a member whose data dir was wiped for its own status: it cannot answer, and waiting for it cost 3 s per decision", func() {
		h := newHarness(v1alpha1.StorageMediumMemory, 3)
		h.setPod("ec-0", corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{{
			Name: datadirguard.ContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 1, Message: datadirguard.MessagePrefix + ": the data dir is empty (set by the test)"}}}}})
		self, other := h.etcd.StatusAsked("ec-0"), h.etcd.StatusAsked("ec-1")
		h.reconcile("ec-0")
		Expect(h.removing("ec-0")).To(BeTrue())
		Expect(h.etcd.StatusAsked("ec-0")).To(Equal(self), "the member itself is not asked")
		Expect(h.etcd.StatusAsked("ec-1")).To(BeNumerically(">", other), "the others are")
	})

	It("does not remove a member that quorum still depends on", func() {
		h := newHarness(v1alpha1.StorageMediumMemory, 3)
		h.losePod("ec-0") // gone from the API, but something still answers as ec-0
		h.etcd.SetDown("ec-1", true)
		h.reconcile("ec-0")
		Expect(h.removing("ec-0")).To(BeFalse())
		Expect(readyMessage(h.member("ec-0"))).To(ContainSubstring("quorum holds only with it"))
	})
})

var _ = Describe("crash-loop replacement", func() {
	It("does not count a voter that answers between its own crashes towards quorum", func() {
		h := newHarness("", 3)
		h.crashLoop("ec-0")
		between := running(true, 7) // ec-1 is up for a moment, and answers
		between.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{
			Reason: "Error", ExitCode: 1, FinishedAt: metav1.NewTime(h.now.Add(-2 * time.Second))}
		h.setPod("ec-1", between)
		h.reconcile("ec-0")
		Expect(h.removing("ec-0")).To(BeFalse(), "without ec-0 only ec-2 is steady: no quorum")
		Expect(readyMessage(h.member("ec-0"))).To(ContainSubstring("1 of 3 voters healthy without it"))

		h.now = h.now.Add(time.Minute) // ec-1 has stayed up since
		h.reconcile("ec-0")
		Expect(h.removing("ec-0")).To(BeTrue())
	})
})

var _ = Describe("one member removal per etcd cluster", func() {
	It("replaces one of two crash-looping members and holds the other until the lease is released", func() {
		h := newHarness("", 5)
		h.crashLoop("ec-0")
		h.crashLoop("ec-1")
		h.reconcile("ec-0")
		h.now = h.now.Add(testPolicy.MaxBackoff) // the cluster-wide backoff is over: only the lease holds ec-1
		h.reconcile("ec-1")
		Expect(h.removing("ec-0")).To(BeTrue())
		Expect(h.removing("ec-1")).To(BeFalse(), "quorum alone (3 of 5 healthy without either) would have let both go")
		Expect(readyMessage(h.member("ec-1"))).To(ContainSubstring("member ec-0 of the same etcd cluster is being replaced"))
		Expect(h.cluster().Status.Replacing.Member).To(Equal("ec-0"))

		h.finalize("ec-0")
		h.playClusterController()
		h.now = h.now.Add(testPolicy.MaxBackoff)
		h.reconcile("ec-1")
		Expect(h.removing("ec-1")).To(BeTrue())
	})

	It("lets only one of two racing workers take the lease, even with a stale view", func() {
		h := newHarness("", 5)
		h.crashLoop("ec-0")
		h.crashLoop("ec-1")
		stale := h.cluster() // ec-1's worker read the EtcdCluster before ec-0 took the lease
		h.reconcile("ec-0")
		Expect(h.removing("ec-0")).To(BeTrue())

		h.cache.frozen = stale
		h.now = h.now.Add(testPolicy.MaxBackoff)
		_, err := h.reconcileErr("ec-1")
		Expect(err).To(HaveOccurred(), "the lease write conflicts")
		Expect(h.removing("ec-1")).To(BeFalse())
	})
})

var _ = Describe("replacement caps", func() {
	It("caps terminal-Pod replacements of a member", func() {
		h := newHarness("", 3)
		for i := 0; i < int(testPolicy.Cap); i++ {
			terminalPodKind.fault(h)
			h.reconcile("ec-0")
			Expect(h.podReplaced("ec-0")).To(BeTrue())
			h.now = h.now.Add(testPolicy.MaxBackoff)
		}
		terminalPodKind.fault(h)
		h.reconcile("ec-0")
		Expect(h.pod("ec-0")).NotTo(BeNil())
		m := h.member("ec-0")
		Expect(meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.ConditionReplacementsExhausted)).To(BeTrue())
		Expect(h.events.with("ReplacementsExhausted")).To(ConsistOf(HavePrefix("EtcdMember/ec-0 Warning")))
	})

	It("lets replace-now lift the cap but never the shared gate: a throttled try spends no value, a granted one spends it once", func() {
		h := newHarness("", 3)
		for i := 0; i < int(testPolicy.Cap); i++ {
			terminalPodKind.fault(h)
			h.reconcile("ec-0")
			h.now = h.now.Add(testPolicy.MaxBackoff)
		}
		terminalPodKind.fault(h)
		h.reconcile("ec-0")
		Expect(meta.IsStatusConditionTrue(h.member("ec-0").Status.Conditions, v1alpha1.ConditionReplacementsExhausted)).To(BeTrue())

		m := h.member("ec-0")
		m.Annotations = map[string]string{v1alpha1.AnnotationReplaceNow: "try-1"}
		Expect(k8sClient.Update(context.Background(), m)).To(Succeed())
		h.gate.delay = 2
		for range 2 {
			h.reconcile("ec-0")
			Expect(h.pod("ec-0")).NotTo(BeNil(), "replace-now does not pass the gate")
			Expect(readyMessage(h.member("ec-0"))).To(ContainSubstring("waiting for the shared replacement rate limiter"))
			Expect(h.member("ec-0").Status.Replacement.ReplaceNowHandled).To(BeEmpty(), "a throttled try spends no value")
		}
		h.reconcile("ec-0")
		Expect(h.podReplaced("ec-0")).To(BeTrue(), "granted: the one replacement the value allows")
		Expect(h.member("ec-0").Status.Replacement.ReplaceNowHandled).To(Equal("try-1"))
		Expect(h.gate.requests[len(h.gate.requests)-1].Action).To(Equal(gate.TerminalPodDelete))

		h.now = h.now.Add(testPolicy.MaxBackoff)
		terminalPodKind.fault(h)
		h.reconcile("ec-0")
		Expect(h.pod("ec-0")).NotTo(BeNil(), "one replacement per value: the cap holds again")
		Expect(meta.IsStatusConditionTrue(h.member("ec-0").Status.Conditions, v1alpha1.ConditionReplacementsExhausted)).To(BeTrue())
	})

	DescribeTable("caps the replacements that remove members per EtcdCluster, with ReplacementsExhausted and an Event on it",
		func(k kind, fault func(h *harness, name string)) {
			h := newHarness(k.medium, 5)
			for _, name := range []string{"ec-0", "ec-1"} {
				fault(h, name)
				h.reconcile(name)
				Expect(h.removing(name)).To(BeTrue())
				h.finalize(name)
				h.playClusterController()
				h.now = h.now.Add(testPolicy.MaxBackoff)
			}
			fault(h, "ec-2")
			h.reconcile("ec-2")
			Expect(h.removing("ec-2")).To(BeFalse())
			ec := h.cluster()
			Expect(ec.Status.Replacement.Total).To(Equal(testPolicy.Cap))
			Expect(meta.IsStatusConditionTrue(ec.Status.Conditions, v1alpha1.ConditionReplacementsExhausted)).To(BeTrue())
			Expect(h.events.with("ReplacementsExhausted")).To(ConsistOf(HavePrefix("EtcdCluster/ec Warning")))
			h.reconcile("ec-2")
			Expect(h.events.with("ReplacementsExhausted")).To(HaveLen(1), "one Event per exhaustion")
		},
		Entry("crash loop", crashLoopKind, func(h *harness, name string) { h.crashLoop(name) }),
		Entry("pod loss", podLossKind, func(h *harness, name string) { h.losePod(name); h.etcd.SetDown(name, true) }),
	)
})

// throttledCount reads the throttled counter of one workload cluster as
// the manager serves it, from the registry.
func throttledCount(cluster string) float64 {
	GinkgoHelper()
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "etcdfleet_member_replacements_throttled_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == cluster {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
