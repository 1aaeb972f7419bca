package etcdcluster

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// A seed restoring from an EtcdSnapshot by name mounts that snapshot's
// Secret, which the workload admission policy admits only when the
// EtcdCluster names it: the location is in status.restoreSource before
// the seed exists (charts/admission_test.go checks the policy's side).
var _ = Describe("restore by snapshot name", func() {
	It("records the snapshot's location in status.restoreSource before it creates the seed", func(ctx SpecContext) {
		h := newHarness()
		snap := &v1alpha1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "nightly"},
			Spec: v1alpha1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: "old"},
				Location: v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: "https://s3.example.com", Bucket: "backups",
					Key: "snaps/", CredentialsSecretRef: corev1.LocalObjectReference{Name: "snap-creds"}}}}}
		Expect(k8sClient.Create(ctx, snap)).To(Succeed())
		snap.Status.Phase = v1alpha1.SnapshotComplete
		snap.Status.Artifact = &v1alpha1.SnapshotArtifact{URI: "s3://backups/snaps/nightly.db", SizeBytes: 1, SHA256: strings.Repeat("a", 64), Revision: 7,
			ETag: "d41d8cd98f00b204e9800998ecf8427e"}
		Expect(k8sClient.Status().Update(ctx, snap)).To(Succeed())

		ec := &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "ec", Namespace: h.ns},
			Spec: v1alpha1.EtcdClusterSpec{Replicas: ptr.To[int32](1), Version: "3.6.16",
				Storage:   v1alpha1.StorageSpec{Size: resource.MustParse("1Gi")},
				Bootstrap: &v1alpha1.BootstrapSpec{Restore: &v1alpha1.RestoreSpec{Source: v1alpha1.RestoreSource{SnapshotName: snap.Name}}}}}
		Expect(k8sClient.Create(ctx, ec)).To(Succeed())

		h.reconcile(ec) // latches the spec snapshot and token
		Expect(h.get(ec).Status.RestoreSource).To(BeNil())
		h.reconcile(ec)
		src := h.get(ec).Status.RestoreSource
		Expect(src).NotTo(BeNil(), "status.restoreSource is written first")
		Expect(src.S3.CredentialsSecretRef.Name).To(Equal("snap-creds"))
		Expect(src.S3.Key).To(Equal("snaps/nightly.db"), "the full key, as the seed restores it")
		Expect(h.members()).To(BeEmpty(), "no seed before the policy can see its Secret")

		h.reconcile(ec)
		ms := h.members()
		Expect(ms).To(HaveLen(1))
		Expect(ms[0].Spec.Restore).NotTo(BeNil())
		Expect(ms[0].Spec.Restore.Location).To(Equal(*src), "the seed mounts what the status names")
		Expect(ms[0].Spec.Restore.ETag).To(Equal(snap.Status.Artifact.ETag), "the seed restores only the object the snapshot stored")
	})
})
