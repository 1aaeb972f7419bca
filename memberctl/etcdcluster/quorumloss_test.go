package etcdcluster

import (
	"context"
	"errors"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// recordingGate grants everything and records what it was asked.
type recordingGate struct {
	mu   sync.Mutex
	asks []gate.Request
}

func (g *recordingGate) Reserve(_ context.Context, r gate.Request) gate.Decision {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.asks = append(g.asks, r)
	return gate.Decision{Cancel: func() {}}
}

// Recovery from a survivor after a lost majority, decided by the cluster
// controller against envtest and fakeetcd: two of three memory members
// lost their Pods (the harness has none), the third has its Pod and
// answers Status, and nothing has a leader.
var _ = Describe("recovery from a survivor", func() {
	var h *harness
	ctx := context.Background()
	BeforeEach(func() { h = newHarness() })

	backup := &v1alpha1.BackupSpec{Interval: &metav1.Duration{Duration: time.Hour},
		Location: v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: "http://s3:8333", Bucket: "backups",
			Key: "prod", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}}}

	// majorityLost forms a 3-member memory cluster with spec.recovery r,
	// spec.backup b, then loses two members for good; the survivor (the
	// second member) keeps its Pod and answers unless silent.
	majorityLost := func(r *v1alpha1.RecoverySpec, b *v1alpha1.BackupSpec, silent bool) (*v1alpha1.EtcdCluster, v1alpha1.EtcdMember) {
		GinkgoHelper()
		ec := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "ec", Namespace: h.ns},
			Spec: v1alpha1.EtcdClusterSpec{Version: "3.6.16", Recovery: r, Backup: b,
				Storage: v1alpha1.StorageSpec{Medium: v1alpha1.StorageMediumMemory, Size: resource.MustParse("64Mi")}}}
		Expect(k8sClient.Create(ctx, ec)).To(Succeed())
		h.etcd.SetRevision(500)
		h.converge(ec, 3)
		survivor := h.members()[1]
		Expect(k8sClient.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: survivor.Name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "etcd"}}}})).To(Succeed())
		h.etcd.SetHealth(survivor.Name, etcd.Status{RaftIndex: 900})
		for _, m := range h.members() {
			if m.Name != survivor.Name || silent {
				h.etcd.SetDown(m.Name, true)
			}
		}
		h.etcd.SetNoQuorum(errors.New("context deadline exceeded"))
		return ec, survivor
	}
	condition := func(ec *v1alpha1.EtcdCluster, t string) *metav1.Condition {
		return apimeta.FindStatusCondition(h.get(ec).Status.Conditions, t)
	}
	survivorSnapshots := func() []v1alpha1.EtcdSnapshot {
		GinkgoHelper()
		l := &v1alpha1.EtcdSnapshotList{}
		Expect(k8sClient.List(ctx, l)).To(Succeed())
		var out []v1alpha1.EtcdSnapshot
		for _, s := range l.Items {
			if s.Namespace == h.ns {
				out = append(out, s)
			}
		}
		return out
	}
	nothingTouched := func(ec *v1alpha1.EtcdCluster) {
		GinkgoHelper()
		Expect(h.get(ec).Status.Recovery).To(BeNil())
		Expect(h.get(ec).Status.ClusterID).NotTo(BeEmpty())
		Expect(h.members()).To(HaveLen(3))
		for _, m := range h.members() {
			Expect(m.DeletionTimestamp).To(BeNil(), "nothing removed")
		}
	}

	It("with the default Manual names MajorityLost and touches nothing", func() {
		ec, _ := majorityLost(nil, backup, false)
		for range 3 {
			h.reconcile(ec)
		}
		Expect(condition(ec, v1alpha1.ConditionAvailable).Reason).To(Equal(v1alpha1.ReasonMajorityLost))
		Expect(condition(ec, v1alpha1.ConditionAvailable).Message).To(ContainSubstring("revision 500"))
		Expect(condition(ec, v1alpha1.ConditionQuorumRecovery)).To(BeNil())
		Expect(survivorSnapshots()).To(BeEmpty(), "no snapshot taken")
		nothingTouched(ec)
	})

	It("refuses while a member that is not provably lost does not answer, and says why", func() {
		ec, survivor := majorityLost(&v1alpha1.RecoverySpec{QuorumLoss: v1alpha1.QuorumLossFromSurvivor}, backup, true)
		h.reconcile(ec)
		h.reconcile(ec)
		c := condition(ec, v1alpha1.ConditionQuorumRecovery)
		Expect(c).NotTo(BeNil())
		Expect(c.Status).To(Equal(metav1.ConditionFalse))
		Expect(c.Reason).To(Equal(v1alpha1.ReasonSurvivorRecoveryRefused))
		Expect(c.Message).To(And(ContainSubstring(survivor.Name), ContainSubstring("not provably lost and do not answer")))
		Expect(callsLike(h.events.All(), "Warning "+v1alpha1.ReasonSurvivorRecoveryRefused)).To(HaveLen(1), "one Event")
		Expect(survivorSnapshots()).To(BeEmpty())
		nothingTouched(ec)
	})

	It("refuses without a place to store the survivor's snapshot", func() {
		ec, _ := majorityLost(&v1alpha1.RecoverySpec{QuorumLoss: v1alpha1.QuorumLossFromSurvivor}, nil, false)
		h.reconcile(ec)
		Expect(condition(ec, v1alpha1.ConditionQuorumRecovery).Message).To(ContainSubstring("spec.backup.location is not set"))
		nothingTouched(ec)
	})

	It("on the annotation, snapshots the survivor alone, and only then removes every old member through the gate", func() {
		ec, survivor := majorityLost(nil, backup, false)
		g := &recordingGate{}
		h.r.Clusters.(workload.Static).C.Gate = g
		cur := h.get(ec)
		cur.Annotations = map[string]string{v1alpha1.AnnotationRecoverFromSurvivor: v1alpha1.RecoverFromSurvivorAuto}
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())

		By("taking the survivor's snapshot, nothing removed meanwhile")
		h.reconcile(ec)
		h.reconcile(ec)
		snaps := survivorSnapshots()
		Expect(snaps).To(HaveLen(1))
		s := snaps[0]
		Expect(s.Spec.MemberName).To(Equal(survivor.Name))
		Expect(s.Spec.Location.S3.Key).To(HavePrefix("prod/" + h.ns + "/ec/"))
		Expect(metav1.IsControlledBy(&s, h.get(ec))).To(BeTrue())
		c := condition(ec, v1alpha1.ConditionQuorumRecovery)
		Expect(c.Status).To(Equal(metav1.ConditionTrue))
		Expect(c.Message).To(ContainSubstring(survivor.Name + " (raft index 900, revision 500)"))
		Expect(g.asks).To(BeEmpty(), "nothing destructive yet")
		nothingTouched(ec)

		By("once the snapshot is Complete: the gate, the decision, the removals")
		s.Status = v1alpha1.EtcdSnapshotStatus{Phase: v1alpha1.SnapshotComplete, CompletedAt: &metav1.Time{Time: h.now},
			Artifact: &v1alpha1.SnapshotArtifact{URI: "s3://backups/x.db", SizeBytes: 1, SHA256: "ab", Revision: 500}}
		Expect(k8sClient.Status().Update(ctx, &s)).To(Succeed())
		h.reconcile(ec)
		h.reconcile(ec)
		Expect(g.asks).To(ContainElement(And(HaveField("Action", gate.SurvivorRecovery), HaveField("Member", survivor.Name),
			HaveField("QuorumLost", true))))
		st := h.get(ec).Status
		Expect(st.Recovery).NotTo(BeNil())
		Expect(st.Recovery.FromSurvivor).To(Equal(survivor.Name))
		Expect(st.Recovery.Source.SnapshotName).To(Equal(s.Name))
		Expect(st.Recovery.ReplacedMembers).To(HaveLen(3), "the survivor goes too: its data is in the snapshot")
		Expect(st.ClusterID).To(BeEmpty())
		Expect(st.RecoverFromSurvivorHandled).To(Equal(v1alpha1.RecoverFromSurvivorAuto), "the one-shot ask is spent")
		Expect(h.events.All()).To(ContainElement(ContainSubstring(v1alpha1.ReasonRecoveringFromSurvivor)))
		for _, m := range h.members() {
			Expect(m.DeletionTimestamp).NotTo(BeNil(), "member %s is removed", m.Name)
		}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: h.ns, Name: s.Name}, &v1alpha1.EtcdSnapshot{})).To(Succeed())
	})

	It("does not act again on an annotation value already spent", func() {
		ec, _ := majorityLost(nil, backup, false)
		h.reconcile(ec)
		cur := h.get(ec)
		cur.Status.RecoverFromSurvivorHandled = "auto"
		Expect(k8sClient.Status().Update(ctx, cur)).To(Succeed())
		cur = h.get(ec)
		cur.Annotations = map[string]string{v1alpha1.AnnotationRecoverFromSurvivor: "auto"}
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		h.reconcile(ec)
		h.reconcile(ec)
		Expect(condition(ec, v1alpha1.ConditionQuorumRecovery)).To(BeNil())
		Expect(survivorSnapshots()).To(BeEmpty())
		nothingTouched(ec)
	})

	It("refuses a survivor's snapshot older than the survivor's data", func() {
		ec, survivor := majorityLost(&v1alpha1.RecoverySpec{QuorumLoss: v1alpha1.QuorumLossFromSurvivor}, backup, false)
		h.reconcile(ec)
		s := &v1alpha1.EtcdSnapshot{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: h.ns, Name: survivor.Name + "-survivor"}, s)).To(Succeed())
		s.Status = v1alpha1.EtcdSnapshotStatus{Phase: v1alpha1.SnapshotComplete, CompletedAt: &metav1.Time{Time: h.now},
			Artifact: &v1alpha1.SnapshotArtifact{URI: "s3://backups/x.db", SizeBytes: 1, SHA256: "ab", Revision: 499}}
		Expect(k8sClient.Status().Update(ctx, s)).To(Succeed())
		h.reconcile(ec)
		h.reconcile(ec)
		Expect(condition(ec, v1alpha1.ConditionQuorumRecovery).Message).To(ContainSubstring("holds revision 499, older than"))
		nothingTouched(ec)
	})
})
