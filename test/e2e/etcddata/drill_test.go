package etcddata_test

import (
	"bytes"
	"fmt"
	"time"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdsnapshot"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
)

// spec.backup.verify on the "pf" cluster, the admission policies on: the
// drill restores the newest Complete snapshot from real object storage
// (SeaweedFS) into a throwaway etcd inside a real Job running
// etcdfleet-agent, reports RestoreVerified with the revision the restored
// etcd served, and fails, leaving the running cluster alone, once the
// stored object was replaced behind the snapshot's back.
var _ = Describe("Restore drill", func() {
	const cluster, ns, name, bucket, key = "pf", "drills", "drilled", "backups", "drill/hand.db"

	It("reports RestoreVerified=True with the revision, and False once the stored object is replaced", func(ctx SpecContext) {
		s3 := sb.ObjectStore(ctx, cluster, ns)
		mc, err := s3.Client()
		Expect(err).NotTo(HaveOccurred())
		c := clients[cluster]

		ec := e2eutil.NewEtcdCluster(ns, name, 1, false)
		ec.Spec.Backup = &v1alpha1.BackupSpec{
			Cron: "0 0 1 1 *", // once a year: the drill restores the hand-made snapshot below
			Location: v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: s3.Endpoint, Bucket: bucket, Key: "sched",
				CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}},
			Verify: &v1alpha1.RestoreDrillSpec{Interval: &metav1.Duration{Duration: 10 * time.Second}}, // the shortest allowed
		}
		Expect(c.Create(ctx, ec)).To(Succeed())
		e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
		etcd := e2eutil.ConnectEtcd(ctx, fleet.Cluster(cluster).Config, c, ns, name)
		defer etcd.Close()
		etcd.PutKeys(ctx, "k", 50)

		snap := &v1alpha1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hand"},
			Spec: v1alpha1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: name},
				Location: v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: s3.Endpoint, Bucket: bucket, Key: key,
					CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}}}}
		Expect(c.Create(ctx, snap)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: snap.Name}, snap)).To(Succeed())
			g.Expect(snap.Status.Phase).To(Equal(v1alpha1.SnapshotComplete), "conditions %+v", snap.Status.Conditions)
		}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		rev := snap.Status.Artifact.Revision
		Expect(rev).To(BeNumerically(">", 50))
		pods := e2eutil.PodUIDs(ctx, c, ns, name)

		restoreVerified := func(g Gomega) (*metav1.Condition, *v1alpha1.RestoreDrillStatus) {
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ec)).To(Succeed())
			cond := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionRestoreVerified)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(ec.Status.Backup).NotTo(BeNil())
			g.Expect(ec.Status.Backup.Verify).NotTo(BeNil())
			return cond, ec.Status.Backup.Verify
		}
		By("a drill of the snapshot passes, with the revision the restored etcd served")
		Eventually(func(g Gomega) {
			cond, st := restoreVerified(g)
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), "%+v", cond)
			g.Expect(cond.Reason).To(Equal(v1alpha1.ReasonRestoreDrillPassed))
			g.Expect(st.SnapshotName).To(Equal(snap.Name))
			// Nothing was written after the snapshot: the restored etcd
			// serves exactly the revision read before it was taken.
			g.Expect(st.Revision).To(Equal(rev))
			g.Expect(cond.Message).To(ContainSubstring(fmt.Sprintf("serving revision %d", rev)))
			g.Expect(st.Duration).NotTo(BeNil())
			g.Expect(st.Duration.Duration).To(BeNumerically(">", 0))
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		sb.ExpectEvent(ctx, cluster, ns, name, corev1.EventTypeNormal, v1alpha1.ReasonRestoreDrillPassed)

		By("the stored object replaced behind the snapshot's back, the next drill fails")
		theirs := []byte("not a snapshot")
		_, err = mc.PutObject(ctx, bucket, key, bytes.NewReader(theirs), int64(len(theirs)), minio.PutObjectOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			cond, st := restoreVerified(g)
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse), "%+v", cond)
			g.Expect(cond.Reason).To(Equal(v1alpha1.ReasonRestoreDrillFailed))
			g.Expect(cond.Message).To(ContainSubstring("EtcdSnapshot " + snap.Name))
			g.Expect(st.CompletionTime).NotTo(BeNil())
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		sb.ExpectWarningEvent(ctx, cluster, ns, name, v1alpha1.ReasonRestoreDrillFailed)

		// A failed drill never touched the running cluster: same Pods, same data.
		Expect(e2eutil.PodUIDs(ctx, c, ns, name)).To(Equal(pods))
		Expect(e2eutil.Available(ec)).To(BeTrue())
		etcd.ExpectKeys(ctx, "k", 50)

		By("verify unset, no drill runs and the condition goes")
		e2eutil.EditEtcdCluster(ctx, c, ns, name, ec, func(ec *v1alpha1.EtcdCluster) { ec.Spec.Backup.Verify = nil })
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ec)).To(Succeed())
			g.Expect(meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionRestoreVerified)).To(BeNil())
			g.Expect(ec.Status.Backup.Verify).To(BeNil())
		}).WithTimeout(30 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		// The last drill's Job goes; none comes back over two intervals.
		jobKey := types.NamespacedName{Namespace: ns, Name: etcdsnapshot.VerifyJobName(snap.Name)}
		job := &batchv1.Job{}
		if err := c.Get(ctx, jobKey, job); err == nil {
			Expect(client.IgnoreNotFound(c.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)))).To(Succeed())
		}
		gone := func() bool { return apierrors.IsNotFound(c.Get(ctx, jobKey, &batchv1.Job{})) }
		Eventually(gone).WithTimeout(30 * time.Second).WithPolling(500 * time.Millisecond).Should(BeTrue())
		Consistently(gone).WithTimeout(25 * time.Second).WithPolling(time.Second).Should(BeTrue())
	}, SpecTimeout(8*time.Minute))
})
