package pacing_test

import (
	"fmt"
	"time"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
)

// ssePrefix is the key prefix of the SSE spec's schedule.
const ssePrefix = "sse/"

var _ = Describe("server-side encryption", func() {
	It("stores a scheduled snapshot with SSE-S3 when spec.backup asks for it, encrypted (AES256) on SeaweedFS, and restores it", func(ctx SpecContext) {
		start := time.Now()
		w := workloads[len(workloads)-1]
		expectPoliciesBound(ctx)

		By("writing a key, then asking spec.backup for SSE-S3")
		e := e2eutil.ConnectEtcd(ctx, sb.Cluster(w).Config, wc[w], etcdNS, etcdName)
		Eventually(func() error { _, err := e.Put(ctx, ssePrefix+w, w); return err }).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		e.Close()
		// The shortest interval, not a cron: the first round comes within
		// 10 s, not at the next minute (up to 60 s of the suite).
		backup := &v1alpha1.BackupSpec{Interval: &metav1.Duration{Duration: 10 * time.Second},
			Location: v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: s3.Endpoint, Bucket: bucket, Key: ssePrefix,
				CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"},
				ServerSideEncryption: &v1alpha1.ServerSideEncryption{Type: v1alpha1.SSES3}}}}
		setBackupEverywhere(ctx, backup, w)
		DeferCleanup(func(ctx SpecContext) {
			backup.Suspend = true
			setBackupEverywhere(ctx, backup, w)
			removeClusters(ctx, restoredName, w)
			removeSnapshots(ctx, ssePrefix)
		})

		By("waiting for the first scheduled snapshot, then suspending the schedule")
		var snap v1alpha1.EtcdSnapshot
		Eventually(func(g Gomega) {
			snaps := snapshotsUnder(ctx, g, w, ssePrefix)
			g.Expect(snaps).NotTo(BeEmpty())
			for _, s := range snaps {
				if s.Status.Phase == v1alpha1.SnapshotFailed {
					StopTrying(fmt.Sprintf("%s failed: %+v", s.Name, s.Status.Conditions)).Now()
				}
				if s.Status.Phase == v1alpha1.SnapshotComplete {
					snap = s
				}
			}
			g.Expect(snap.Name).NotTo(BeEmpty(), "no Complete snapshot yet")
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		backup.Suspend = true
		setBackupEverywhere(ctx, backup, w)

		By("checking the object: encrypted by the store, the bytes recorded when read back")
		expectObject(ctx, Default, *snap.Status.Artifact)
		s3c, err := s3.Client()
		Expect(err).NotTo(HaveOccurred())
		head, err := s3c.StatObject(ctx, bucket, artifactKey(*snap.Status.Artifact), minio.StatObjectOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(head.Metadata.Get("X-Amz-Server-Side-Encryption")).To(Equal("AES256"), "HEAD of %s", snap.Status.Artifact.URI)
		Expect(head.ETag).To(Equal(snap.Status.Artifact.ETag))

		By("restoring it by snapshotName into a new cluster")
		restoreFrom(ctx, w, restoredName, snap.Name)
		expectRestored(ctx, w, restoredName, snap.Name, []v1alpha1.EtcdSnapshot{snap})
		expectOwnKeys(ctx, w, restoredName, ssePrefix, w)
		AddReportEntry("SSE spec", time.Since(start).Round(time.Second).String())
	}, SpecTimeout(4*time.Minute))
})
