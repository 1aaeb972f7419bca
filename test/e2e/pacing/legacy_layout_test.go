package pacing_test

import (
	"fmt"
	"time"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
)

const (
	// legacyPrefix holds an object in the layout scheduled snapshots had
	// before the per-cluster one: <prefix><snapshot>.db.
	legacyPrefix = "legacy/"
	// archivePrefix is where docs/operations.md's recipe copies it.
	archivePrefix = "archive/"
)

var _ = Describe("backups in the old key layout", func() {
	It("restores an object of the old layout <prefix><snapshot>.db, copied elsewhere as the runbook says, by S3 location", func(ctx SpecContext) {
		start := time.Now()
		w := workloads[0]
		expectPoliciesBound(ctx)

		By("storing a snapshot at <prefix><snapshot>.db, the old layout")
		e := e2eutil.ConnectEtcd(ctx, sb.Cluster(w).Config, wc[w], etcdNS, etcdName)
		Eventually(func() error { _, err := e.Put(ctx, legacyPrefix+w, w); return err }).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		e.Close()
		// What a scheduled snapshot was named and where it went.
		snap := &v1alpha1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: etcdNS, Name: etcdName + "-20260101000000"},
			Spec: v1alpha1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: etcdName},
				Location: v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: s3.Endpoint, Bucket: bucket, Key: legacyPrefix,
					CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}}}}
		Expect(wc[w].Create(ctx, snap)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			removeClusters(ctx, restoredName, w)
			removeSnapshots(ctx, legacyPrefix)
		})
		Eventually(func(g Gomega) {
			g.Expect(wc[w].Get(ctx, types.NamespacedName{Namespace: etcdNS, Name: snap.Name}, snap)).To(Succeed())
			if snap.Status.Phase == v1alpha1.SnapshotFailed {
				StopTrying(fmt.Sprintf("%s failed: %+v", snap.Name, snap.Status.Conditions)).Now()
			}
			g.Expect(snap.Status.Phase).To(Equal(v1alpha1.SnapshotComplete))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		old := legacyPrefix + snap.Name + ".db"
		Expect(artifactKey(*snap.Status.Artifact)).To(Equal(old))

		By("copying it server-side to the archive, as `aws s3 cp` or `mc cp` does")
		s3c, err := s3.Client()
		Expect(err).NotTo(HaveOccurred())
		moved := archivePrefix + etcdNS + "/" + etcdName + "/" + snap.Name + ".db"
		_, err = s3c.CopyObject(ctx, minio.CopyDestOptions{Bucket: bucket, Object: moved},
			minio.CopySrcOptions{Bucket: bucket, Object: old, MatchETag: snap.Status.Artifact.ETag})
		Expect(err).NotTo(HaveOccurred())

		By("restoring a new cluster from the copy by S3 location")
		ec := e2eutil.NewEtcdCluster(etcdNS, restoredName, 1, false)
		ec.Spec.Bootstrap = &v1alpha1.BootstrapSpec{Restore: &v1alpha1.RestoreSpec{Source: v1alpha1.RestoreSource{
			Location: &v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: s3.Endpoint, Bucket: bucket, Key: moved,
				CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}}}}}
		Expect(wc[w].Create(ctx, ec)).To(Succeed())
		e2eutil.WaitAvailable(ctx, wc[w], etcdNS, restoredName, 2*time.Minute)
		Expect(wc[w].Get(ctx, types.NamespacedName{Namespace: etcdNS, Name: restoredName}, ec)).To(Succeed())
		Expect(ec.Status.RestoredFrom).NotTo(BeNil())
		Expect(ec.Status.RestoredFrom.URI).To(Equal("s3://" + bucket + "/" + moved))
		expectOwnKeys(ctx, w, restoredName, legacyPrefix, w)
		AddReportEntry("old layout spec", time.Since(start).Round(time.Second).String())
	}, SpecTimeout(4*time.Minute))
})
