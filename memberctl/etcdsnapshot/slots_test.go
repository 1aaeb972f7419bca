package etcdsnapshot

import (
	"context"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gstruct"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// recordingSlots is a gate.Slots that grants after Delay is set to zero
// and records every call; the fleet's real one is tested in fleet/limiter
// and, with the reconciler, by the sandbox e2e test/e2e/pacing.
type recordingSlots struct {
	mu                       sync.Mutex
	delay                    time.Duration
	reason                   string
	acquired, held, released []gate.Slot
}

func (s *recordingSlots) Acquire(_ context.Context, sl gate.Slot) gate.Decision {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.delay > 0 {
		return gate.Decision{Delay: s.delay, Cancel: func() {}, Reason: s.reason}
	}
	s.acquired = append(s.acquired, sl)
	return gate.Decision{Cancel: func() {}}
}

func (s *recordingSlots) Hold(sl gate.Slot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = append(s.held, sl)
}

func (s *recordingSlots) Release(sl gate.Slot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.released = append(s.released, sl)
}

// pacedReconciler is a Reconciler whose cluster asks slots.
func pacedReconciler(slots gate.Slots) *Reconciler {
	cl := &workload.Cluster{Client: env.Client, Reader: env.Client, Recorder: record.NewFakeRecorder(100), Slots: slots}
	return &Reconciler{Clusters: workload.Static{C: cl}, Options: DefaultOptions()}
}

var _ = Describe("EtcdSnapshot reconciler with paced starts", func() {
	reconcileWith := func(ctx context.Context, pr *Reconciler, s *v1alpha1.EtcdSnapshot) (time.Duration, *v1alpha1.EtcdSnapshot) {
		GinkgoHelper()
		res, err := pr.Reconcile(ctx, "", client.ObjectKeyFromObject(s))
		Expect(err).NotTo(HaveOccurred())
		got := &v1alpha1.EtcdSnapshot{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(s), got)).To(Succeed())
		return res.RequeueAfter, got
	}

	It("waits Pending with WaitingForSlot and the gate's delay, creating no Job, until a slot is granted", func(ctx SpecContext) {
		ns := env.NewNamespace(ctx, "snap-test")
		runningCluster(ctx, ns)
		s := newSnapshot(ns)
		Expect(env.Client.Create(ctx, s)).To(Succeed())
		slots := &recordingSlots{delay: 7 * time.Second, reason: "cluster c1 already holds its 1 snapshot slot (snapshots.maxPerCluster)"}
		pr := pacedReconciler(slots)

		after, got := reconcileWith(ctx, pr, s)
		Expect(after).To(Equal(7 * time.Second))
		Expect(got.Status.Phase).To(Equal(v1alpha1.SnapshotPending))
		Expect(readyReason(got)).To(Equal(v1alpha1.ReasonWaitingForSlot))
		Expect(meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady).Message).To(
			Equal("waiting for a snapshot slot: cluster c1 already holds its 1 snapshot slot (snapshots.maxPerCluster)"),
			"the condition says which cap holds the snapshot")
		err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: JobName("s")}, &batchv1.Job{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no Job without a slot: %v", err)

		slots.delay = 0
		_, got = reconcileWith(ctx, pr, s)
		Expect(got.Status.Phase).To(Equal(v1alpha1.SnapshotStarted))
		Expect(slots.acquired).To(HaveLen(1))
		Expect(slots.acquired[0]).To(gstruct.MatchFields(gstruct.IgnoreExtras, gstruct.Fields{"Namespace": Equal(ns), "Name": Equal("s"), "EtcdCluster": Equal("main")}))
		Expect(slots.acquired[0].Expires).To(BeTemporally("~", time.Now().Add(DefaultOptions().ActiveDeadline+slotMargin), 5*time.Second),
			"the slot expires with the Job's active deadline")
	})

	It("re-takes a Started snapshot's slot after a restart, and releases it at the final phase and on deletion", func(ctx SpecContext) {
		ns := env.NewNamespace(ctx, "snap-test")
		runningCluster(ctx, ns)
		s := newSnapshot(ns)
		Expect(env.Client.Create(ctx, s)).To(Succeed())
		_, started := reconcileWith(ctx, pacedReconciler(&recordingSlots{}), s)
		Expect(started.Status.Phase).To(Equal(v1alpha1.SnapshotStarted))

		By("a restarted manager: new slots, the Job still running")
		slots := &recordingSlots{}
		pr := pacedReconciler(slots)
		reconcileWith(ctx, pr, s)
		Expect(slots.held).To(HaveLen(1))
		Expect(slots.held[0].Name).To(Equal("s"))
		Expect(slots.held[0].Expires).To(BeTemporally("==", started.Status.StartedAt.Add(DefaultOptions().ActiveDeadline+slotMargin)))
		Expect(slots.released).To(BeEmpty())

		By("the Job failing")
		job := &batchv1.Job{}
		Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: JobName("s")}, job)).To(Succeed())
		now := metav1.Now()
		job.Status.StartTime = &now
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "DeadlineExceeded"}}
		Expect(env.Client.Status().Update(ctx, job)).To(Succeed())
		_, got := reconcileWith(ctx, pr, s)
		Expect(got.Status.Phase).To(Equal(v1alpha1.SnapshotFailed))
		Expect(slots.released).To(HaveLen(1))
		Expect(slots.held).To(HaveLen(1), "no hold once final")

		By("the EtcdSnapshot deleted")
		Expect(env.Client.Delete(ctx, got)).To(Succeed())
		_, err := pr.Reconcile(ctx, "", client.ObjectKeyFromObject(s))
		Expect(err).NotTo(HaveOccurred())
		Expect(slots.released).To(HaveLen(2))
		Expect(slots.released[1]).To(gstruct.MatchFields(gstruct.IgnoreExtras, gstruct.Fields{"Namespace": Equal(ns), "Name": Equal("s")}))
	})
})
