package v1alpha1_test

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// Literal messages of the EtcdSnapshot CEL rules.
const (
	msgSnapshotImmutable = "spec is immutable"
	msgOneLocation       = "exactly one of s3 and pvc must be set"
	msgPVCPath           = "pvc.path must be relative and must not contain '..'"
	msgSnapshotName      = "metadata.name must be at most 52 characters"
)

func newSnapshot(loc v1alpha1.SnapshotLocation) *v1alpha1.EtcdSnapshot {
	return &v1alpha1.EtcdSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: uniqueName("snap"), Namespace: ns},
		Spec:       v1alpha1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: "main"}, Location: loc},
	}
}

func s3Location(key string) v1alpha1.SnapshotLocation {
	return v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: "http://127.0.0.1:8333", Bucket: "backups",
		Key: key, CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}}
}

func pvcLocation(path string) v1alpha1.SnapshotLocation {
	return v1alpha1.SnapshotLocation{PVC: &v1alpha1.PVCLocation{ClaimName: "backups", Path: path}}
}

var _ = Describe("EtcdSnapshot validation", func() {
	ctx := context.Background()

	It("admits an S3 or a PVC location and defaults the S3 region", func() {
		s := newSnapshot(s3Location("prod/"))
		Expect(k8sClient.Create(ctx, s)).To(Succeed())
		Expect(s.Spec.Location.S3.Region).To(Equal("us-east-1"))
		Expect(k8sClient.Create(ctx, newSnapshot(pvcLocation("daily/a.db")))).To(Succeed())
	})

	It("wants exactly one location", func() {
		expectInvalid(k8sClient.Create(ctx, newSnapshot(v1alpha1.SnapshotLocation{})), msgOneLocation)
		both := s3Location("")
		both.PVC = pvcLocation("").PVC
		expectInvalid(k8sClient.Create(ctx, newSnapshot(both)), msgOneLocation)
	})

	It("keeps a PVC path inside the claim", func() {
		expectInvalid(k8sClient.Create(ctx, newSnapshot(pvcLocation("/etc/passwd"))), msgPVCPath)
		expectInvalid(k8sClient.Create(ctx, newSnapshot(pvcLocation("a/../../b"))), msgPVCPath)
	})

	It("rejects an S3 endpoint that is no http(s) URL", func() {
		s := newSnapshot(s3Location(""))
		s.Spec.Location.S3.Endpoint = "s3.example.com"
		expectInvalid(k8sClient.Create(ctx, s), "spec.location.s3.endpoint")
	})

	It("bounds the name so that the Job name stays valid", func() {
		s := newSnapshot(pvcLocation(""))
		s.Name = strings.Repeat("a", 53)
		expectInvalid(k8sClient.Create(ctx, s), msgSnapshotName)
	})

	It("makes the spec immutable but lets the status change", func() {
		s := newSnapshot(s3Location("a.db"))
		Expect(k8sClient.Create(ctx, s)).To(Succeed())
		s.Spec.Location.S3.Key = "b.db"
		expectInvalid(k8sClient.Update(ctx, s), msgSnapshotImmutable)

		cur := &v1alpha1.EtcdSnapshot{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(s), cur)).To(Succeed())
		cur.Status.Phase = v1alpha1.SnapshotStarted
		Expect(k8sClient.Status().Update(ctx, cur)).To(Succeed())
	})
})
