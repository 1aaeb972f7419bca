package etcddata_test

import (
	"slices"
	"time"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
)

// spec.backup on the "pf" cluster: an interval schedule storing to real
// object storage (SeaweedFS), pruned by retention, objects included.
var _ = Describe("Scheduled backup", func() {
	const cluster, ns, name, bucket, prefix = "pf", "backups", "scheduled", "backups", "sched"

	It("takes a snapshot every interval and keeps only the newest two, as EtcdSnapshots and as objects", func(ctx SpecContext) {
		s3 := sb.ObjectStore(ctx, cluster, ns)
		mc, err := s3.Client()
		Expect(err).NotTo(HaveOccurred())

		c := clients[cluster]
		ec := e2eutil.NewEtcdCluster(ns, name, 1, false)
		ec.Spec.Backup = &v1alpha1.BackupSpec{
			Interval: &metav1.Duration{Duration: 10 * time.Second}, // the shortest allowed
			// No trailing "/": the schedule makes it a prefix all the same.
			Location: v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: s3.Endpoint, Bucket: bucket, Key: prefix,
				CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}},
			Retention: &v1alpha1.BackupRetention{Keep: ptr.To[int32](2)},
		}
		Expect(c.Create(ctx, ec)).To(Succeed())

		// Every scheduled snapshot lives at least one interval (it is pruned
		// only once newer ones completed), so polling twice a second sees
		// each of them.
		seen := map[string]bool{}
		scheduled := func(g Gomega) []v1alpha1.EtcdSnapshot {
			var list v1alpha1.EtcdSnapshotList
			g.Expect(c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{
				v1alpha1.LabelCluster: name, v1alpha1.LabelScheduled: "true"})).To(Succeed())
			for _, s := range list.Items {
				seen[s.Name] = true
				g.Expect(s.Status.Phase).NotTo(Equal(v1alpha1.SnapshotFailed), "conditions %+v", s.Status.Conditions)
			}
			return list.Items
		}
		Eventually(func(g Gomega) {
			scheduled(g)
			g.Expect(len(seen)).To(BeNumerically(">=", 4))
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ec)).To(Succeed())
			cond := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionBackedUp)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), "%+v", cond)
			g.Expect(cond.Reason).To(Equal(v1alpha1.ReasonBackupOnSchedule))
			g.Expect(ec.Status.Backup).NotTo(BeNil())
			g.Expect(ec.Status.Backup.NextScheduleTime).NotTo(BeNil())
			g.Expect(ec.Status.Backup.NextScheduleTime.Time).To(BeTemporally(">", ec.Status.Backup.LastScheduleTime.Time))
		}).WithTimeout(4 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())

		// Stop the schedule, so that the end state holds still.
		e2eutil.EditEtcdCluster(ctx, c, ns, name, ec, func(ec *v1alpha1.EtcdCluster) { ec.Spec.Backup.Suspend = true })

		names := func() []string {
			all := make([]string, 0, len(seen))
			for n := range seen {
				all = append(all, n)
			}
			slices.Sort(all) // <cluster>-<yyyymmddhhmmss>: by due time
			return all
		}
		var kept []v1alpha1.EtcdSnapshot
		Eventually(func(g Gomega) {
			items := scheduled(g)
			for _, s := range items {
				g.Expect(s.Status.Phase).To(Equal(v1alpha1.SnapshotComplete), "%s is still %q", s.Name, s.Status.Phase)
				g.Expect(s.DeletionTimestamp).To(BeNil(), "%s is still being deleted", s.Name)
			}
			all := names()
			g.Expect(items).To(HaveLen(2))
			g.Expect([]string{items[0].Name, items[1].Name}).To(ConsistOf(all[len(all)-2:]), "the newest two are kept")
			kept = items
		}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())

		all := names()
		Expect(len(all)).To(BeNumerically(">=", 4))
		for _, n := range all[:len(all)-2] {
			err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, &v1alpha1.EtcdSnapshot{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "pruned snapshot %s: %v", n, err)
		}
		// The bucket holds exactly the kept snapshots' objects, under the
		// cluster's own namespace/name/UID, which no other cluster shares.
		dir := prefix + "/" + ns + "/" + name + "/" + string(ec.UID) + "/"
		var objects []string
		for obj := range mc.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix + "/", Recursive: true}) {
			Expect(obj.Err).NotTo(HaveOccurred())
			objects = append(objects, obj.Key)
		}
		Expect(objects).To(ConsistOf(dir+all[len(all)-2]+".db", dir+all[len(all)-1]+".db"))
		for _, s := range kept {
			info, err := mc.StatObject(ctx, bucket, dir+s.Name+".db", minio.StatObjectOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(info.Size).To(Equal(s.Status.Artifact.SizeBytes))
		}

		// status.backup shows the newest Complete one; BackedUp says the
		// schedule is suspended.
		newest := kept[0]
		if kept[1].Name > newest.Name {
			newest = kept[1]
		}
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ec)).To(Succeed())
			b := ec.Status.Backup
			g.Expect(b).NotTo(BeNil())
			g.Expect(b.LastSnapshotName).To(Equal(newest.Name))
			g.Expect(b.LastSizeBytes).To(Equal(newest.Status.Artifact.SizeBytes))
			g.Expect(b.LastRevision).To(Equal(newest.Status.Artifact.Revision))
			g.Expect(b.LastSuccessfulTime.Equal(newest.Status.CompletedAt)).To(BeTrue())
			g.Expect(b.LastDuration).NotTo(BeNil())
			g.Expect(b.LastScheduleTime.UTC().Format(time.RFC3339)).To(Equal(newest.Annotations[v1alpha1.AnnotationScheduledAt]))
			cond := meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionBackedUp)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Reason).To(Equal(v1alpha1.ReasonBackupSuspended))
		}).WithTimeout(30 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	}, SpecTimeout(8*time.Minute))
})
