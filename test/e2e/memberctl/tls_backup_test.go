package memberctl_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
)

// backupAndRestoreTLS is the TLS cluster's backup and restore, the last
// spec of "a TLS EtcdCluster" (it reuses that cluster, which holds the
// keys k000..k099): an EtcdSnapshot to real object storage, whose agent
// reaches etcd over mTLS with the operator's client pair (the members
// refuse any other client), then a new TLS cluster, client mTLS and peer
// TLS on pairs of the same CA, restored from it. The restored cluster has
// the keys written before the snapshot and not the one written after.
func backupAndRestoreTLS(ctx context.Context, cluster, ns, name string, ca *e2eutil.CA) {
	GinkgoHelper()
	const restored = "secure-restored"
	c := clients[cluster]
	s3 := sb.ObjectStore(ctx, cluster, ns)
	cli := e2eutil.ConnectEtcd(ctx, fleet.Cluster(cluster).Config, c, ns, name)
	defer cli.Close()
	_, err := cli.Put(ctx, "before", "snapshot")
	Expect(err).NotTo(HaveOccurred())

	snap := &v1alpha1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tls-backup"},
		Spec: v1alpha1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: name},
			Location: v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: s3.Endpoint, Bucket: "backups",
				CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}}}}
	Expect(c.Create(ctx, snap)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: snap.Name}, snap)).To(Succeed())
		g.Expect(snap.Status.Phase.Terminal()).To(BeTrue(), "phase %q, conditions %+v", snap.Status.Phase, snap.Status.Conditions)
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	Expect(snap.Status.Phase).To(Equal(v1alpha1.SnapshotComplete), "conditions %+v", snap.Status.Conditions)
	Expect(snap.Status.Artifact).NotTo(BeNil())
	Expect(snap.Status.Artifact.SHA256).To(MatchRegexp(`^[0-9a-f]{64}$`))
	_, err = cli.Put(ctx, "after", "snapshot")
	Expect(err).NotTo(HaveOccurred())

	By("restoring it into a new TLS cluster")
	secrets := e2eutil.TLSSecretsOf(restored)
	secrets.WriteTLS(ctx, c, ns, restored, ca, ca.PEM)
	ec := e2eutil.NewEtcdCluster(ns, restored, 1, false)
	ec.Spec.TLS = secrets.Spec()
	ec.Spec.Bootstrap = &v1alpha1.BootstrapSpec{Restore: &v1alpha1.RestoreSpec{
		Source: v1alpha1.RestoreSource{SnapshotName: snap.Name}}}
	Expect(c.Create(ctx, ec)).To(Succeed())
	// Its Pods use CPU the rest of the suite wants.
	DeferCleanup(func(ctx SpecContext) { Expect(c.Delete(ctx, ec)).To(Succeed()) })
	e2eutil.WaitAvailable(ctx, c, ns, restored, 2*time.Minute)

	re := e2eutil.ConnectEtcd(ctx, fleet.Cluster(cluster).Config, c, ns, restored)
	defer re.Close()
	re.ExpectKeys(ctx, "k", 100)
	got, err := re.Get(ctx, "before")
	Expect(err).NotTo(HaveOccurred())
	Expect(got.Kvs).To(HaveLen(1), "the key written just before the snapshot")
	got, err = re.Get(ctx, "after")
	Expect(err).NotTo(HaveOccurred())
	Expect(got.Kvs).To(BeEmpty(), "a key written after the snapshot")
	list, err := re.MemberList(ctx)
	Expect(err).NotTo(HaveOccurred())
	Expect(list.Members).To(HaveLen(1))
	Expect(list.Members[0].PeerURLs).To(HaveEach(HavePrefix("https://")))
	Expect(list.Members[0].ClientURLs).To(HaveEach(HavePrefix("https://")))
	Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: restored}, ec)).To(Succeed())
	Expect(ec.Status.RestoredFrom).NotTo(BeNil())
	Expect(ec.Status.RestoredFrom.SnapshotName).To(Equal(snap.Name))
}
