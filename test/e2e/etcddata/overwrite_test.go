package etcddata_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdsnapshot"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox/objstore"
)

// Stored snapshots are never overwritten, and a snapshot acts only on its
// own object: two clusters of the same name in two namespaces of "pf"
// share one bucket, and a third party replaces an object behind a
// snapshot's back. Real Jobs running etcdfleet-agent, real SeaweedFS.
var _ = Describe("Stored snapshots are each snapshot's own", Ordered, func() {
	const cluster, nsA, nsB, name, key = "pf", "own-a", "own-b", "main", "shared/main.db"
	var s3 *objstore.Server
	var mc *minio.Client

	BeforeAll(func(ctx SpecContext) {
		s3 = sb.ObjectStore(ctx, cluster, nsA)
		sb.Namespace(ctx, cluster, nsB)
		c := clients[cluster]
		Expect(c.Create(ctx, e2eutil.S3Secret(nsB, s3))).To(Succeed())
		for _, ns := range []string{nsA, nsB} {
			Expect(c.Create(ctx, e2eutil.NewEtcdCluster(ns, name, 1, false))).To(Succeed())
		}
		for _, ns := range []string{nsA, nsB} {
			e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
		}
		var err error
		mc, err = s3.Client()
		Expect(err).NotTo(HaveOccurred())
	}, NodeTimeout(4*time.Minute))

	snapshot := func(ns, snap string) *v1alpha1.EtcdSnapshot {
		return &v1alpha1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: snap},
			Spec: v1alpha1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: name}, DeletionPolicy: v1alpha1.DeletionDelete,
				Location: v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: s3.Endpoint, Bucket: "backups",
					Key: key, CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}}}}
	}
	final := func(ctx context.Context, ns, snap string) *v1alpha1.EtcdSnapshot {
		GinkgoHelper()
		s := &v1alpha1.EtcdSnapshot{}
		Eventually(func(g Gomega) {
			g.Expect(clients[cluster].Get(ctx, types.NamespacedName{Namespace: ns, Name: snap}, s)).To(Succeed())
			g.Expect(s.Status.Phase.Terminal()).To(BeTrue(), "phase %q, conditions %+v", s.Status.Phase, s.Status.Conditions)
		}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		return s
	}
	stored := func(ctx context.Context) (etag, sum string) {
		GinkgoHelper()
		obj, err := mc.GetObject(ctx, "backups", key, minio.GetObjectOptions{})
		Expect(err).NotTo(HaveOccurred())
		body, err := io.ReadAll(obj)
		Expect(err).NotTo(HaveOccurred())
		info, err := obj.Stat()
		Expect(err).NotTo(HaveOccurred())
		return info.ETag, sha256Hex(body)
	}

	var first *v1alpha1.EtcdSnapshot

	It("records the stored object's ETag", func(ctx SpecContext) {
		Expect(clients[cluster].Create(ctx, snapshot(nsA, "first"))).To(Succeed())
		first = final(ctx, nsA, "first")
		Expect(first.Status.Phase).To(Equal(v1alpha1.SnapshotComplete), "conditions %+v", first.Status.Conditions)
		etag, sum := stored(ctx)
		Expect(first.Status.Artifact.ETag).To(Equal(etag))
		Expect(first.Status.Artifact.SHA256).To(Equal(sum))
	}, SpecTimeout(3*time.Minute))

	It("fails a second snapshot to the same key with ObjectExists and leaves the first object intact", func(ctx SpecContext) {
		Expect(clients[cluster].Create(ctx, snapshot(nsB, "second"))).To(Succeed())
		s := final(ctx, nsB, "second")
		Expect(s.Status.Phase).To(Equal(v1alpha1.SnapshotFailed))
		ready := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady)
		Expect(ready.Reason).To(Equal(v1alpha1.ReasonObjectExists))
		Expect(ready.Message).To(ContainSubstring("s3://backups/" + key))
		etag, sum := stored(ctx)
		Expect(etag).To(Equal(first.Status.Artifact.ETag))
		Expect(sum).To(Equal(first.Status.Artifact.SHA256))
	}, SpecTimeout(3*time.Minute))

	It("refuses a snapshot whose location is another live snapshot's, starting no Job", func(ctx SpecContext) {
		Expect(clients[cluster].Create(ctx, snapshot(nsA, "again"))).To(Succeed())
		s := final(ctx, nsA, "again")
		Expect(s.Status.Phase).To(Equal(v1alpha1.SnapshotFailed))
		ready := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady)
		Expect(ready.Reason).To(Equal(v1alpha1.ReasonDuplicateLocation))
		Expect(ready.Message).To(ContainSubstring("EtcdSnapshot first"))
		Expect(s.Status.JobName).To(BeEmpty())
	}, SpecTimeout(time.Minute))

	It("leaves an object that replaced the snapshot's when the snapshot is deleted", func(ctx SpecContext) {
		c := clients[cluster]
		theirs := []byte("someone else's object")
		_, err := mc.PutObject(ctx, "backups", key, bytes.NewReader(theirs), int64(len(theirs)), minio.PutObjectOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Delete(ctx, first)).To(Succeed())

		// The cleanup Job's Pods fail, saying why, and the object stays.
		Eventually(func(g Gomega) {
			var pods corev1.PodList
			g.Expect(c.List(ctx, &pods, client.InNamespace(nsA), client.MatchingLabels{etcdsnapshot.LabelSnapshot: "first"})).To(Succeed())
			var msgs []string
			for _, p := range pods.Items {
				for _, cs := range p.Status.ContainerStatuses {
					if t := cs.State.Terminated; t != nil && strings.HasPrefix(p.Name, etcdsnapshot.CleanupJobName("first")) {
						msgs = append(msgs, t.Message)
					}
				}
			}
			g.Expect(msgs).To(ContainElement(ContainSubstring("left in place")))
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		_, sum := stored(ctx)
		Expect(sum).To(Equal(sha256Hex(theirs)))
		s := &v1alpha1.EtcdSnapshot{}
		Expect(c.Get(ctx, client.ObjectKeyFromObject(first), s)).To(Succeed(), "the finalizer holds the snapshot while its object is not its own")

		// Let it go by hand, as the runbook says.
		patch := client.MergeFrom(s.DeepCopy())
		controllerutil.RemoveFinalizer(s, v1alpha1.FinalizerSnapshotCleanup)
		Expect(c.Patch(ctx, s, patch)).To(Succeed())
	}, SpecTimeout(3*time.Minute))
})
