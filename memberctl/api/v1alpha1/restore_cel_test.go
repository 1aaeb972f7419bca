package v1alpha1_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

func restoreFrom(src v1alpha1.RestoreSource) func(*v1alpha1.EtcdCluster) {
	return func(ec *v1alpha1.EtcdCluster) {
		ec.Spec.Bootstrap = &v1alpha1.BootstrapSpec{Restore: &v1alpha1.RestoreSpec{Source: src}}
	}
}

func s3At(key string) *v1alpha1.SnapshotLocation {
	return &v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: "http://s3:8333", Bucket: "snaps", Key: key,
		CredentialsSecretRef: corev1.LocalObjectReference{Name: "creds"}}}
}

var _ = Describe("EtcdCluster spec.bootstrap.restore CEL", func() {
	ctx := context.Background()

	It("takes exactly one of snapshotName and a location naming a whole object", func() {
		Expect(k8sClient.Create(ctx, newCluster(restoreFrom(v1alpha1.RestoreSource{SnapshotName: "s1"})))).To(Succeed())
		Expect(k8sClient.Create(ctx, newCluster(restoreFrom(v1alpha1.RestoreSource{Location: s3At("a/b.db")})))).To(Succeed())
		const one = "exactly one of snapshotName and location must be set"
		expectInvalid(k8sClient.Create(ctx, newCluster(restoreFrom(v1alpha1.RestoreSource{}))), one)
		expectInvalid(k8sClient.Create(ctx, newCluster(restoreFrom(v1alpha1.RestoreSource{SnapshotName: "s1", Location: s3At("k")}))), one)
		expectInvalid(k8sClient.Create(ctx, newCluster(restoreFrom(v1alpha1.RestoreSource{Location: s3At("dir/")}))), "location.s3.key must name the snapshot object")
		pvc := &v1alpha1.SnapshotLocation{PVC: &v1alpha1.PVCLocation{ClaimName: "c"}}
		expectInvalid(k8sClient.Create(ctx, newCluster(restoreFrom(v1alpha1.RestoreSource{Location: pvc}))), "location.pvc.path must name the snapshot file")
	})

	It("may be neither added, removed nor changed", func() {
		ec := newCluster(restoreFrom(v1alpha1.RestoreSource{SnapshotName: "s1"}))
		Expect(k8sClient.Create(ctx, ec)).To(Succeed())
		changed := ec.DeepCopy()
		changed.Spec.Bootstrap.Restore.Source.SnapshotName = "s2"
		expectInvalid(k8sClient.Update(ctx, changed), "bootstrap is immutable")
		removed := ec.DeepCopy()
		removed.Spec.Bootstrap = nil
		expectInvalid(k8sClient.Update(ctx, removed), "bootstrap may not be added or removed")

		plain := newCluster()
		Expect(k8sClient.Create(ctx, plain)).To(Succeed())
		restoreFrom(v1alpha1.RestoreSource{SnapshotName: "s1"})(plain)
		expectInvalid(k8sClient.Update(ctx, plain), "bootstrap may not be added or removed")
	})
})
