package etcddata_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
)

// Restore at bootstrap on the "pf" cluster: a snapshot of one cluster,
// stored in real object storage, seeds a new cluster through the seed's
// restore init container (the repo's etcdfleet-agent restore-agent).
var _ = Describe("Restore at bootstrap", func() {
	const cluster, ns, source, restored = "pf", "restores", "original", "restored"

	It("restores every key of an EtcdSnapshot into a new cluster with a new cluster ID", func(ctx SpecContext) {
		s3 := sb.ObjectStore(ctx, cluster, ns)
		c := clients[cluster]
		Expect(c.Create(ctx, e2eutil.NewEtcdCluster(ns, source, 1, false))).To(Succeed())
		e2eutil.WaitAvailable(ctx, c, ns, source, 2*time.Minute)
		etcd := e2eutil.ConnectEtcd(ctx, fleet.Cluster(cluster).Config, c, ns, source)
		defer etcd.Close()
		etcd.PutKeys(ctx, "k", 100)

		snap := &v1alpha1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "before"},
			Spec: v1alpha1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: source},
				Location: v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: s3.Endpoint, Bucket: "backups",
					CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}}}}
		Expect(c.Create(ctx, snap)).To(Succeed())
		// The new cluster is created at once: its seed waits for the
		// snapshot to complete (WaitingForRestoreSource).
		ec := e2eutil.NewEtcdCluster(ns, restored, 1, false)
		ec.Spec.Bootstrap = &v1alpha1.BootstrapSpec{Restore: &v1alpha1.RestoreSpec{
			Source: v1alpha1.RestoreSource{SnapshotName: snap.Name}}}
		Expect(c.Create(ctx, ec)).To(Succeed())
		e2eutil.WaitAvailable(ctx, c, ns, restored, 2*time.Minute)

		re := e2eutil.ConnectEtcd(ctx, fleet.Cluster(cluster).Config, c, ns, restored)
		defer re.Close()
		re.ExpectKeys(ctx, "k", 100)

		var orig, got v1alpha1.EtcdCluster
		Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: source}, &orig)).To(Succeed())
		Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: restored}, &got)).To(Succeed())
		Expect(got.Status.ClusterID).NotTo(BeEmpty())
		Expect(got.Status.ClusterID).NotTo(Equal(orig.Status.ClusterID), "a restored cluster gets a new cluster ID")
		Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: snap.Name}, snap)).To(Succeed())
		Expect(got.Status.RestoredFrom).To(Equal(&v1alpha1.RestoredFrom{URI: snap.Status.Artifact.URI,
			SnapshotName: snap.Name, Revision: snap.Status.Artifact.Revision}))
		// What the admission policy reads to admit the seed's Secret.
		Expect(got.Status.RestoreSource).NotTo(BeNil())
		Expect(got.Status.RestoreSource.S3.CredentialsSecretRef.Name).To(Equal("s3"))
		Eventually(func(g Gomega) {
			list, err := fleet.Cluster(cluster).Clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list.Items).To(ContainElement(And(
				HaveField("InvolvedObject.Name", restored), HaveField("Reason", v1alpha1.ReasonRestored),
				HaveField("Message", ContainSubstring("EtcdSnapshot before")))))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	}, SpecTimeout(3*time.Minute))
})
