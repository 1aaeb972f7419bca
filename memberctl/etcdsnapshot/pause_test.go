package etcdsnapshot

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

var _ = Describe("EtcdSnapshot reconciler in a paused cluster", func() {
	It("holds the snapshot Pending (HeldWhilePaused), asking for no slot and creating no Job, until the pause ends", func(ctx SpecContext) {
		ns := env.NewNamespace(ctx, "snap-test")
		runningCluster(ctx, ns)
		s := newSnapshot(ns)
		Expect(env.Client.Create(ctx, s)).To(Succeed())
		slots := &recordingSlots{}
		pr := pacedReconciler(slots)
		paused := true
		cl, err := pr.Clusters.Cluster(ctx, "")
		Expect(err).NotTo(HaveOccurred())
		cl.Paused = func() bool { return paused }

		reconcile := func() *v1alpha1.EtcdSnapshot {
			GinkgoHelper()
			res, err := pr.Reconcile(ctx, "", client.ObjectKeyFromObject(s))
			Expect(err).NotTo(HaveOccurred())
			got := &v1alpha1.EtcdSnapshot{}
			Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(s), got)).To(Succeed())
			if paused {
				Expect(res.RequeueAfter).To(Equal(pausedRecheck), "a pause ends with no event the snapshot watches")
			}
			return got
		}
		got := reconcile()
		Expect(got.Status.Phase).To(Equal(v1alpha1.SnapshotPending))
		Expect(readyReason(got)).To(Equal(v1alpha1.ReasonHeldWhilePaused))
		Expect(slots.acquired).To(BeEmpty())
		err = env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: JobName("s")}, &batchv1.Job{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no Job while paused: %v", err)

		paused = false
		Expect(reconcile().Status.Phase).To(Equal(v1alpha1.SnapshotStarted))
		Expect(slots.acquired).To(HaveLen(1))
	})
})
