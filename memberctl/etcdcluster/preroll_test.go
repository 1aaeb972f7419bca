package etcdcluster

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// With spec.backup, a roll starts only once an EtcdSnapshot taken for it is
// Complete; a failed one holds the roll. The harness plays the snapshot
// reconciler by setting the snapshot's phase.
var _ = Describe("snapshot before a roll", func() {
	var h *harness
	ctx := context.Background()
	BeforeEach(func() { h = newHarness() })

	snapshots := func() []v1alpha1.EtcdSnapshot {
		GinkgoHelper()
		var l v1alpha1.EtcdSnapshotList
		Expect(k8sClient.List(ctx, &l, client.InNamespace(h.ns))).To(Succeed())
		return l.Items
	}
	setPhase := func(s *v1alpha1.EtcdSnapshot, phase v1alpha1.SnapshotPhase, reason, msg string) {
		GinkgoHelper()
		s.Status.Phase = phase
		s.Status.CompletedAt = ptr.To(metav1.Now())
		if phase == v1alpha1.SnapshotComplete {
			s.Status.Artifact = &v1alpha1.SnapshotArtifact{URI: "s3://snaps/x.db", SizeBytes: 1, SHA256: "00", Revision: 42}
		}
		apimeta.SetStatusCondition(&s.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady,
			Status: metav1.ConditionFalse, Reason: reason, Message: msg})
		Expect(k8sClient.Status().Update(ctx, s)).To(Succeed())
	}
	rolled := func() int {
		GinkgoHelper()
		n := 0
		for _, m := range h.members() {
			if m.Spec.Options != nil {
				n++
			}
		}
		return n
	}
	cond := func(ec *v1alpha1.EtcdCluster) metav1.Condition {
		GinkgoHelper()
		c := apimeta.FindStatusCondition(h.get(ec).Status.Conditions, v1alpha1.ConditionPreRollSnapshot)
		Expect(c).NotTo(BeNil())
		return *c
	}

	It("takes a snapshot first, holds the roll while it fails, and rolls once one is Complete", func() {
		ec := h.newCluster(3)
		cur := h.get(ec)
		cur.Spec.Backup = &v1alpha1.BackupSpec{Interval: &metav1.Duration{Duration: 24 * time.Hour},
			Location: v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: "http://s3:8333", Bucket: "snaps", Key: "daily/",
				CredentialsSecretRef: corev1.LocalObjectReference{Name: "creds"}}}}
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		h.converge(ec, 3)
		for _, m := range h.members() {
			h.setMemberStatus(&m, func(s *v1alpha1.EtcdMemberStatus) { s.Version = "3.6.16" })
		}
		Expect(snapshots()).To(BeEmpty(), "no roll, no snapshot")

		cur = h.get(ec)
		cur.Spec.Options = &v1alpha1.EtcdOptions{QuotaBackendBytes: ptr.To(int64(4 << 30))}
		cur.Spec.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		h.reconcile(ec)
		h.reconcile(ec)
		snaps := snapshots()
		Expect(snaps).To(HaveLen(1))
		first := snaps[0]
		Expect(first.Name).To(HavePrefix("ec-preroll-"))
		Expect(first.Spec.ClusterRef.Name).To(Equal("ec"))
		Expect(first.Spec.Location.S3.Key).To(HavePrefix("daily/"+h.ns+"/ec/"), "where spec.backup stores its snapshots")
		Expect(first.Labels).NotTo(HaveKey(v1alpha1.LabelScheduled), "not one of the schedule's: retention does not prune it")
		Expect(metav1.IsControlledBy(&first, h.get(ec))).To(BeTrue())
		Expect(rolled()).To(BeZero(), "no member is rolled before the snapshot is Complete")
		Expect(cond(ec).Reason).To(Equal(v1alpha1.ReasonTakingSnapshot))
		Expect(apimeta.FindStatusCondition(h.get(ec).Status.Conditions, v1alpha1.ConditionProgressing).Message).
			To(ContainSubstring("waiting for EtcdSnapshot " + first.Name))
		Expect(callsLike(h.events.All(), "Normal PreRollSnapshot Created EtcdSnapshot "+first.Name)).To(HaveLen(1))

		By("the snapshot fails: the roll is held, with a Warning")
		setPhase(&first, v1alpha1.SnapshotFailed, v1alpha1.ReasonJobFailed, "bucket unreachable")
		h.reconcile(ec)
		h.reconcile(ec)
		Expect(rolled()).To(BeZero())
		c := cond(ec)
		Expect(c.Status).To(Equal(metav1.ConditionFalse))
		Expect(c.Reason).To(Equal(v1alpha1.ReasonSnapshotFailed))
		Expect(c.Message).To(ContainSubstring("JobFailed: bucket unreachable"))
		Expect(c.Message).To(ContainSubstring("delete it to take another"))
		Expect(callsLike(h.events.All(), "Warning PreRollSnapshotFailed ")).To(HaveLen(1), "one Warning per failure")
		Expect(snapshots()).To(HaveLen(1), "a failed snapshot is not retried on its own")

		By("deleting the failed snapshot takes another; once Complete the roll starts")
		first.Finalizers = nil // no snapshot reconciler here to clean up
		Expect(k8sClient.Update(ctx, &first)).To(Succeed())
		Expect(k8sClient.Delete(ctx, &first)).To(Succeed())
		h.reconcile(ec)
		snaps = snapshots()
		Expect(snaps).To(HaveLen(1))
		Expect(snaps[0].UID).NotTo(Equal(first.UID))
		Expect(rolled()).To(BeZero())
		setPhase(&snaps[0], v1alpha1.SnapshotComplete, "Complete", "stored")
		h.reconcile(ec)
		Expect(rolled()).To(Equal(1))
		c = cond(ec)
		Expect(c.Status).To(Equal(metav1.ConditionTrue))
		Expect(c.Message).To(ContainSubstring("(revision 42) was taken before rolling onto the current Pod template"))
		Expect(snapshots()).To(HaveLen(1), "one snapshot per roll: later steps reuse it")
	})
})
