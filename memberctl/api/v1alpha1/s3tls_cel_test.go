package v1alpha1_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

var _ = Describe("S3 location caBundleSecretRef and serverSideEncryption", func() {
	ctx := context.Background()
	loc := func(endpoint string, ca *v1alpha1.SecretKeyRef, sse *v1alpha1.ServerSideEncryption) v1alpha1.SnapshotLocation {
		l := s3Location("k/")
		l.S3.Endpoint, l.S3.CABundleSecretRef, l.S3.ServerSideEncryption = endpoint, ca, sse
		return l
	}

	It("defaults the CA bundle's key to ca.crt and needs https for it", func() {
		s := newSnapshot(loc("https://s3.example:9000", &v1alpha1.SecretKeyRef{Name: "storage-ca"}, nil))
		Expect(k8sClient.Create(ctx, s)).To(Succeed())
		Expect(s.Spec.Location.S3.CABundleSecretRef.Key).To(Equal(v1alpha1.DefaultCABundleKey))
		expectInvalid(k8sClient.Create(ctx, newSnapshot(loc("http://s3.example:9000", &v1alpha1.SecretKeyRef{Name: "storage-ca"}, nil))),
			"caBundleSecretRef needs an https:// endpoint")
	})

	It("takes a KMS key for SSE-KMS only, and requires it there", func() {
		Expect(k8sClient.Create(ctx, newSnapshot(loc("https://s3.example", nil, &v1alpha1.ServerSideEncryption{Type: v1alpha1.SSES3})))).To(Succeed())
		Expect(k8sClient.Create(ctx, newSnapshot(loc("https://s3.example", nil,
			&v1alpha1.ServerSideEncryption{Type: v1alpha1.SSEKMS, KMSKeyID: "alias/etcd"})))).To(Succeed())
		expectInvalid(k8sClient.Create(ctx, newSnapshot(loc("https://s3.example", nil, &v1alpha1.ServerSideEncryption{Type: v1alpha1.SSEKMS}))),
			"serverSideEncryption.kmsKeyID is required for type SSE-KMS")
		expectInvalid(k8sClient.Create(ctx, newSnapshot(loc("https://s3.example", nil,
			&v1alpha1.ServerSideEncryption{Type: v1alpha1.SSES3, KMSKeyID: "alias/etcd"}))),
			"serverSideEncryption.kmsKeyID is only for type SSE-KMS")
		expectInvalid(k8sClient.Create(ctx, newSnapshot(loc("https://s3.example", nil, &v1alpha1.ServerSideEncryption{Type: "SSE-C"}))),
			"Unsupported value")
	})
})
