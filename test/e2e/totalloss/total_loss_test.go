package totalloss_test

import (
	"context"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox/objstore"
)

// Restore after total loss on the "faults" cluster: every node of a memory
// cluster loses power, every tmpfs comes back empty, and with
// spec.recovery.restoreOnTotalLoss the cluster is re-bootstrapped from its
// newest Complete EtcdSnapshot, stored in real object storage (SeaweedFS).
// Without the opt-in the cluster stays down: see
// test/e2e/faults/powerloss_test.go.
var _ = Describe("restore after total loss", func() {
	const cluster, ns, name = "faults", "total-loss", "tl"

	It("brings a power-lost memory cluster back from its newest snapshot, with every key written before it", func(ctx SpecContext) {
		c := clients[cluster]
		ec, etcd, s3 := startRecoverable(ctx, cluster, ns, name, true)

		By("taking a snapshot, then writing more that it cannot hold")
		snap := snapshotNow(ctx, cluster, ns, name, s3.Endpoint)
		etcd.PutKeys(ctx, "after", 20)
		resp, err := etcd.Get(ctx, "after/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		Expect(err).NotTo(HaveOccurred())
		last := resp.Header.Revision
		etcd.Close()
		Expect(last).To(BeNumerically(">", snap.Status.Artifact.Revision))
		By("waiting until the cluster controller has seen the newest revision")
		// It looks at most every observeRevisionEvery, in a pass; a poke
		// wakes one sooner than the 60 s steady requeue.
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(ec), ec)).To(Succeed())
			if o := ec.Status.LastObserved; o == nil || o.Revision < last {
				g.Expect(e2eutil.Poke(ctx, c, ec)).To(Succeed())
			}
			g.Expect(ec.Status.LastObserved).NotTo(BeNil())
			g.Expect(ec.Status.LastObserved.Revision).To(BeNumerically(">=", last))
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		oldID, oldMembers := ec.Status.ClusterID, e2eutil.MemberIDs(ctx, c, ns, name)

		By("losing power on every node: every tmpfs comes back empty")
		Expect(fleet.Cluster(cluster).PowerLoss(ctx, 2*time.Second)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(ec), ec)).To(Succeed())
			g.Expect(ec.Status.Recovery).NotTo(BeNil())
			g.Expect(ec.Status.Recovery.Phase).To(Equal(v1alpha1.RecoveryRestored))
		}).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
		e2eutil.WaitAvailable(ctx, c, ns, name, 3*time.Minute)

		By("a new cluster, of new members, holding exactly what the snapshot holds")
		Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ec)).To(Succeed())
		Expect(ec.Status.ClusterID).NotTo(BeEmpty())
		Expect(ec.Status.ClusterID).NotTo(Equal(oldID), "a restored cluster gets a new cluster ID")
		now := e2eutil.MemberIDs(ctx, c, ns, name)
		Expect(now).To(HaveLen(3))
		for n := range now {
			Expect(oldMembers).NotTo(HaveKey(n), "no member of the lost cluster runs in the new one")
		}
		re := e2eutil.ConnectEtcd(ctx, fleet.Cluster(cluster).Config, c, ns, name)
		defer re.Close()
		re.ExpectKeys(ctx, "k", 100)
		re.ExpectKeys(ctx, "after", 0)

		By("status and Events say what was restored and what was lost")
		r := ec.Status.Recovery
		Expect(r.PreviousClusterID).To(Equal(oldID))
		Expect(r.ClusterID).To(Equal(ec.Status.ClusterID))
		Expect(r.Source.SnapshotName).To(Equal(snap.Name))
		Expect(r.Source.SHA256).To(Equal(snap.Status.Artifact.SHA256))
		Expect(r.Source.Revision).To(Equal(snap.Status.Artifact.Revision))
		Expect(r.URI).To(Equal(snap.Status.Artifact.URI))
		Expect(r.LastObserved.Revision).To(BeNumerically(">=", last))
		Expect(r.LostRevisions).To(Equal(r.LastObserved.Revision - snap.Status.Artifact.Revision))
		Expect(r.ReplacedMembers).To(HaveLen(len(oldMembers)))
		cond := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionTotalLoss)
		Expect(cond).NotTo(BeNil())
		Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		Expect(cond.Reason).To(Equal(v1alpha1.ReasonRestoredAfterTotalLoss))
		Eventually(func(g Gomega) {
			list, err := fleet.Cluster(cluster).Clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list.Items).To(ContainElement(And(HaveField("InvolvedObject.Name", name),
				HaveField("Reason", v1alpha1.ReasonRestoringAfterTotalLoss), HaveField("Type", corev1.EventTypeWarning))))
			g.Expect(list.Items).To(ContainElement(And(HaveField("InvolvedObject.Name", name),
				HaveField("Reason", v1alpha1.ReasonRestoredAfterTotalLoss),
				HaveField("Message", And(ContainSubstring("EtcdSnapshot "+snap.Name), ContainSubstring("revision(s)"))))))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	}, SpecTimeout(10*time.Minute))
})

// The snapshot a restore after total loss would use is read back where it
// is stored before any member is removed: the newest one's object was
// deleted and the next one's overwritten, so the cluster comes back from
// the oldest, which still holds what it recorded.
var _ = Describe("restore after total loss, its snapshot checked first", func() {
	const cluster, ns, name = "faults", "total-loss-verify", "tlv"

	It("passes over snapshots whose objects were deleted or overwritten and restores the newest that verifies", func(ctx SpecContext) {
		c := clients[cluster]
		ec, etcd, s3 := startRecoverable(ctx, cluster, ns, name, true)
		oldest := snapshotNamed(ctx, cluster, ns, name, "oldest", s3.Endpoint)
		etcd.PutKeys(ctx, "mid", 10)
		older := snapshotNamed(ctx, cluster, ns, name, "older", s3.Endpoint)
		etcd.PutKeys(ctx, "new", 10)
		newest := snapshotNamed(ctx, cluster, ns, name, "newest", s3.Endpoint)
		etcd.Close()

		By("deleting the newest snapshot's object and overwriting the next one's")
		mc, err := s3.Client()
		Expect(err).NotTo(HaveOccurred())
		Expect(mc.RemoveObject(ctx, "backups", newest.Name+".db", minio.RemoveObjectOptions{})).To(Succeed())
		junk := strings.Repeat("not this snapshot ", 100)
		_, err = mc.PutObject(ctx, "backups", older.Name+".db", strings.NewReader(junk), int64(len(junk)), minio.PutObjectOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("losing power on every node")
		Expect(fleet.Cluster(cluster).PowerLoss(ctx, 2*time.Second)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(ec), ec)).To(Succeed())
			g.Expect(ec.Status.Recovery).NotTo(BeNil())
		}).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(ec.Status.Recovery.Source.SnapshotName).To(Equal(oldest.Name), "decided before any member was removed")
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(ec), ec)).To(Succeed())
			g.Expect(ec.Status.Recovery.Phase).To(Equal(v1alpha1.RecoveryRestored))
		}).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
		e2eutil.WaitAvailable(ctx, c, ns, name, 3*time.Minute)

		By("holding what the oldest snapshot holds, and the Event naming what was passed over and why")
		re := e2eutil.ConnectEtcd(ctx, fleet.Cluster(cluster).Config, c, ns, name)
		defer re.Close()
		re.ExpectKeys(ctx, "k", 100)
		re.ExpectKeys(ctx, "mid", 0)
		list, err := fleet.Cluster(cluster).Clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(list.Items).To(ContainElement(And(HaveField("InvolvedObject.Name", name),
			HaveField("Reason", v1alpha1.ReasonRestoringAfterTotalLoss),
			HaveField("Message", And(ContainSubstring("EtcdSnapshot oldest"), ContainSubstring("Passed over"),
				ContainSubstring("newest (s3://backups/newest.db)"), ContainSubstring("older (s3://backups/older.db)"),
				// The overwritten object no longer has the ETag the
				// snapshot recorded: the check asks for that object alone.
				ContainSubstring("ObjectChanged"))))))
	}, SpecTimeout(12*time.Minute))
})

// startRecoverable creates a 3-member EtcdCluster opted in to restore
// after total loss, with an object store and its Secret "s3" in ns, and
// returns it once Available with the keys k/0..99 written, a client and
// the object store.
func startRecoverable(ctx context.Context, cluster, ns, name string, memory bool) (*v1alpha1.EtcdCluster, *e2eutil.Etcd, *objstore.Server) {
	GinkgoHelper()
	s3 := sb.ObjectStore(ctx, cluster, ns)
	c := clients[cluster]
	ec := e2eutil.NewEtcdCluster(ns, name, 3, memory)
	ec.Spec.Recovery = &v1alpha1.RecoverySpec{RestoreOnTotalLoss: true}
	Expect(c.Create(ctx, ec)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(c.Delete(ctx, ec))).To(Succeed()) })
	e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
	etcd := e2eutil.ConnectEtcd(ctx, fleet.Cluster(cluster).Config, c, ns, name)
	etcd.PutKeys(ctx, "k", 100)
	return ec, etcd, s3
}

// snapshotNow takes EtcdSnapshot "last-good" of ns/name into the object
// store at endpoint (startRecoverable's) and returns it Complete.
func snapshotNow(ctx context.Context, cluster, ns, name, endpoint string) *v1alpha1.EtcdSnapshot {
	GinkgoHelper()
	return snapshotNamed(ctx, cluster, ns, name, "last-good", endpoint)
}

// snapshotNamed is snapshotNow with the EtcdSnapshot's name, snap; its
// object is <snap>.db in bucket "backups".
func snapshotNamed(ctx context.Context, cluster, ns, name, snapName, endpoint string) *v1alpha1.EtcdSnapshot {
	GinkgoHelper()
	c := clients[cluster]
	snap := &v1alpha1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: snapName},
		Spec: v1alpha1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: name},
			Location: v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: endpoint, Bucket: "backups",
				CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}}}}
	Expect(c.Create(ctx, snap)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(snap), snap)).To(Succeed())
		g.Expect(snap.Status.Phase).To(Equal(v1alpha1.SnapshotComplete), "conditions %+v", snap.Status.Conditions)
	}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	return snap
}
