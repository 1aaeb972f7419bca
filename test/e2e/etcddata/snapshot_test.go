package etcddata_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdsnapshot"
	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox/objstore"
)

// EtcdSnapshots on the "pf" cluster: the Job runs the repo's own
// etcdfleet-agent (the simulated kubelet runs etcdfleet-image containers
// as that binary) and stores to real object storage (SeaweedFS) or a PVC.
var _ = Describe("EtcdSnapshot", Ordered, func() {
	const cluster, ns, name = "pf", "snapshots", "snapped"
	var s3 *objstore.Server

	BeforeAll(func(ctx SpecContext) {
		s3 = e2eutil.StartObjectStore(ctx, "backups")

		c := clients[cluster]
		sb.Namespace(ctx, cluster, ns)
		Expect(c.Create(ctx, e2eutil.NewEtcdCluster(ns, name, 3, false))).To(Succeed())
		e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
		etcd := e2eutil.ConnectEtcd(ctx, fleet.Cluster(cluster).Config, c, ns, name)
		defer etcd.Close()
		etcd.PutKeys(ctx, "k", 200)
		Expect(c.Create(ctx, e2eutil.S3Secret(ns, s3))).To(Succeed())
	}, NodeTimeout(4*time.Minute))

	// complete waits for the snapshot to reach a final phase and wants Complete.
	complete := func(ctx context.Context, snap string) *v1alpha1.EtcdSnapshot {
		GinkgoHelper()
		s := &v1alpha1.EtcdSnapshot{}
		Eventually(func(g Gomega) {
			g.Expect(clients[cluster].Get(ctx, types.NamespacedName{Namespace: ns, Name: snap}, s)).To(Succeed())
			g.Expect(s.Status.Phase.Terminal()).To(BeTrue(), "phase %q, conditions %+v", s.Status.Phase, s.Status.Conditions)
		}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		Expect(s.Status.Phase).To(Equal(v1alpha1.SnapshotComplete), "conditions %+v", s.Status.Conditions)
		Expect(s.Status.Artifact).NotTo(BeNil())
		Expect(s.Status.Artifact.Revision).To(BeNumerically(">=", 200), "200 keys were written before")
		return s
	}

	It("streams a snapshot to S3 whose stored object matches the recorded sha256", func(ctx SpecContext) {
		c := clients[cluster]
		snap := &v1alpha1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "to-s3"},
			Spec: v1alpha1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: name},
				Location: v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: s3.Endpoint, Bucket: "backups",
					Key: "prod/", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}}}}
		Expect(c.Create(ctx, snap)).To(Succeed())
		s := complete(ctx, snap.Name)
		Expect(s.Status.Artifact.URI).To(Equal("s3://backups/prod/to-s3.db"))

		mc, err := s3.Client()
		Expect(err).NotTo(HaveOccurred())
		obj, err := mc.GetObject(ctx, "backups", "prod/to-s3.db", minio.GetObjectOptions{})
		Expect(err).NotTo(HaveOccurred())
		body, err := io.ReadAll(obj)
		Expect(err).NotTo(HaveOccurred())
		Expect(int64(len(body))).To(Equal(s.Status.Artifact.SizeBytes))
		Expect(sha256Hex(body)).To(Equal(s.Status.Artifact.SHA256))
		info, err := mc.StatObject(ctx, "backups", "prod/to-s3.db", minio.StatObjectOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(info.ETag).To(MatchRegexp(`-\d+$`), "a multipart upload's ETag ends in -<parts>")

		job := &batchv1.Job{}
		Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: etcdsnapshot.JobName(snap.Name)}, job)).To(Succeed())
		Expect(*job.Spec.Template.Spec.AutomountServiceAccountToken).To(BeFalse())
		Expect(job.Spec.ActiveDeadlineSeconds).NotTo(BeNil())
		Expect(job.Spec.TTLSecondsAfterFinished).NotTo(BeNil())
		Expect(job.Spec.Template.Labels).NotTo(HaveKey(v1alpha1.LabelCluster), "the cluster's Services must not select the Job's Pod")
	}, SpecTimeout(3*time.Minute))

	It("stores a snapshot on a PVC whose file matches the recorded sha256", func(ctx SpecContext) {
		c := clients[cluster]
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "backups"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
		Expect(c.Create(ctx, pvc)).To(Succeed())
		snap := &v1alpha1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "to-pvc"},
			Spec: v1alpha1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: name},
				Location: v1alpha1.SnapshotLocation{PVC: &v1alpha1.PVCLocation{ClaimName: "backups", Path: "daily/"}}}}
		Expect(c.Create(ctx, snap)).To(Succeed())
		s := complete(ctx, snap.Name)
		Expect(s.Status.Artifact.URI).To(Equal("pvc://backups/daily/to-pvc.db"))

		Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "backups"}, pvc)).To(Succeed())
		body, err := os.ReadFile(filepath.Join(fleet.Cluster(cluster).Kubelet.ClaimPath(pvc), "daily", "to-pvc.db"))
		Expect(err).NotTo(HaveOccurred())
		Expect(int64(len(body))).To(Equal(s.Status.Artifact.SizeBytes))
		Expect(sha256Hex(body)).To(Equal(s.Status.Artifact.SHA256))
	}, SpecTimeout(3*time.Minute))

	It("fails for good with the agent's error when the store refuses the credentials", func(ctx SpecContext) {
		c := clients[cluster]
		Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wrong"},
			StringData: map[string]string{agent.AccessKeyIDKey: "nobody", agent.SecretAccessKeyKey: "wrong"}})).To(Succeed())
		snap := &v1alpha1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "refused"},
			Spec: v1alpha1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: name},
				Location: v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: s3.Endpoint, Bucket: "backups",
					CredentialsSecretRef: corev1.LocalObjectReference{Name: "wrong"}}}}}
		Expect(c.Create(ctx, snap)).To(Succeed())
		s := &v1alpha1.EtcdSnapshot{}
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: snap.Name}, s)).To(Succeed())
			g.Expect(s.Status.Phase).To(Equal(v1alpha1.SnapshotFailed))
		}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		ready := s.Status.Conditions[0]
		Expect(ready.Reason).To(Equal(v1alpha1.ReasonJobFailed))
		Expect(ready.Message).To(ContainSubstring("store snapshot"), "the agent's own error reaches the condition")
		Expect(s.Status.Artifact).To(BeNil())
		// A refused credential is refused again: the Job fails at its
		// first Pod (agent.ExitPermanent), not after backoffLimit more.
		job := &batchv1.Job{}
		Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: etcdsnapshot.JobName(snap.Name)}, job)).To(Succeed())
		Expect(job.Status.Failed).To(Equal(int32(1)), "Pods failed")
		Expect(ready.Message).To(ContainSubstring("PodFailurePolicy"))
	}, SpecTimeout(3*time.Minute))

	It("says BackupFailed on the EtcdCluster when a scheduled snapshot fails, with the agent's error, and OnSchedule once the next one completes", func(ctx SpecContext) {
		c := clients[cluster]
		Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wrong-sched"},
			StringData: map[string]string{agent.AccessKeyIDKey: "nobody", agent.SecretAccessKeyKey: "wrong"}})).To(Succeed())
		ec := &v1alpha1.EtcdCluster{}
		Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ec)).To(Succeed())
		patch := client.MergeFrom(ec.DeepCopy())
		ec.Spec.Backup = &v1alpha1.BackupSpec{Interval: &metav1.Duration{Duration: 10 * time.Second},
			Location: v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: s3.Endpoint, Bucket: "backups", Key: "sched",
				CredentialsSecretRef: corev1.LocalObjectReference{Name: "wrong-sched"}}}}
		Expect(c.Patch(ctx, ec, patch)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ec)).To(Succeed())
			patch := client.MergeFrom(ec.DeepCopy())
			ec.Spec.Backup = nil
			Expect(c.Patch(ctx, ec, patch)).To(Succeed())
		})
		backedUp := func(g Gomega) *metav1.Condition {
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ec)).To(Succeed())
			cond := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionBackedUp)
			g.Expect(cond).NotTo(BeNil())
			return cond
		}
		Eventually(func(g Gomega) {
			cond := backedUp(g)
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse), "%+v", cond)
			g.Expect(cond.Reason).To(Equal(v1alpha1.ReasonBackupFailed))
			g.Expect(cond.Message).To(And(ContainSubstring("scheduled snapshot "+name+"-"), ContainSubstring("store snapshot")),
				"names the snapshot and carries the agent's error")
		}).WithTimeout(3 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())

		By("giving the schedule working credentials: the next run completes")
		Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ec)).To(Succeed())
		patch = client.MergeFrom(ec.DeepCopy())
		ec.Spec.Backup.Location.S3.CredentialsSecretRef.Name = "s3"
		Expect(c.Patch(ctx, ec, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			cond := backedUp(g)
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), "%+v", cond)
			g.Expect(cond.Reason).To(Equal(v1alpha1.ReasonBackupOnSchedule))
			g.Expect(ec.Status.Backup).NotTo(BeNil())
			g.Expect(ec.Status.Backup.LastSuccessfulTime).NotTo(BeNil())
		}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	}, SpecTimeout(6*time.Minute))
})

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
