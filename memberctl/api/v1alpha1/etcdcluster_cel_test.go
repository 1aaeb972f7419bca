package v1alpha1_test

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// Literal messages of the EtcdCluster CEL rules.
const (
	msgMemoryPaused       = "replicas may not be 0 with storage.medium Memory: a memory-backed cluster cannot be paused"
	msgMemorySize         = "storage.size must be greater than 0 when storage.medium is Memory"
	msgSizePositive       = "storage.size must be greater than 0"
	msgMediumImmutable    = "storage.medium is immutable"
	msgSizeShrink         = "storage.size may not shrink"
	msgSCAddRemove        = "storage.storageClassName may not be added or removed"
	msgSCImmutable        = "storage.storageClassName is immutable"
	msgTLSAddRemove       = "tls may not be added or removed: every member's peer URLs would change scheme"
	msgTLSImmutable       = "tls is immutable: to rotate certificates or a CA, change the contents of the Secrets it names"
	msgServerSecretName   = "tls.client.serverSecretRef.name must be set"
	msgOperatorSecretName = "tls.client.operatorClientSecretRef.name must be set"
	msgPeerSecretName     = "tls.peer.secretRef.name must be set"
	msgName               = "metadata.name must be a DNS-1035 label of at most 56 characters"
)

func memory(size string) func(*v1alpha1.EtcdCluster) {
	return func(ec *v1alpha1.EtcdCluster) {
		ec.Spec.Storage.Medium = v1alpha1.StorageMediumMemory
		ec.Spec.Storage.Size = resource.MustParse(size)
	}
}

func replicas(n int32) func(*v1alpha1.EtcdCluster) {
	return func(ec *v1alpha1.EtcdCluster) { ec.Spec.Replicas = ptr.To(n) }
}

func withTLS(server, operator, peer string) func(*v1alpha1.EtcdCluster) {
	return func(ec *v1alpha1.EtcdCluster) {
		ec.Spec.TLS = &v1alpha1.TLSSpec{
			Client: &v1alpha1.ClientTLSSpec{ServerSecretRef: corev1.LocalObjectReference{Name: server}},
			Peer:   &v1alpha1.PeerTLSSpec{SecretRef: corev1.LocalObjectReference{Name: peer}},
		}
		if operator != "" {
			ec.Spec.TLS.Client.OperatorClientSecretRef = &corev1.LocalObjectReference{Name: operator}
		}
	}
}

var _ = Describe("EtcdCluster CEL on create", func() {
	ctx := context.Background()

	It("admits only names whose derived Pod and Service names stay valid DNS labels", func() {
		named := func(n string) func(*v1alpha1.EtcdCluster) { return func(ec *v1alpha1.EtcdCluster) { ec.Name = n } }
		longest := "a" + strings.Repeat("b", v1alpha1.MaxClusterNameLength-1)
		Expect(k8sClient.Create(ctx, newCluster(named(longest)))).To(Succeed())
		expectInvalid(k8sClient.Create(ctx, newCluster(named(longest+"c"))), msgName)
		expectInvalid(k8sClient.Create(ctx, newCluster(named("1abc"))), msgName)
		expectInvalid(k8sClient.Create(ctx, newCluster(named("abc.def"))), msgName)
	})

	It("caps replicas at MaxReplicas", func() {
		Expect(k8sClient.Create(ctx, newCluster(replicas(v1alpha1.MaxReplicas)))).To(Succeed())
		err := k8sClient.Create(ctx, newCluster(replicas(v1alpha1.MaxReplicas+1)))
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("spec.replicas"))
	})

	It("rejects replicas 0 with Memory, and accepts replicas 0 on PVCs", func() {
		expectInvalid(k8sClient.Create(ctx, newCluster(memory("256Mi"), replicas(0))), msgMemoryPaused)
		Expect(k8sClient.Create(ctx, newCluster(replicas(0)))).To(Succeed())
		Expect(k8sClient.Create(ctx, newCluster(memory("256Mi"), replicas(1)))).To(Succeed())
	})

	It("requires a Memory size above 0", func() {
		expectInvalid(k8sClient.Create(ctx, newCluster(memory("0"))), msgMemorySize)
		expectInvalid(k8sClient.Create(ctx, newCluster(memory("-1Mi"))), msgMemorySize)
		Expect(k8sClient.Create(ctx, newCluster(memory("1Mi")))).To(Succeed())
	})

	It("requires a PVC size above 0", func() {
		expectInvalid(k8sClient.Create(ctx, newCluster(func(ec *v1alpha1.EtcdCluster) {
			ec.Spec.Storage.Size = resource.MustParse("0")
		})), msgSizePositive)
	})

	It("evaluates the size rules on an integer size too", func() {
		err := createUnstructured(map[string]any{
			"apiVersion": "etcd.etcdfleet.io/v1alpha1", "kind": "EtcdCluster",
			"metadata": map[string]any{"name": uniqueName("ec-int"), "namespace": ns},
			"spec": map[string]any{"version": "3.6.16",
				"storage": map[string]any{"medium": "Memory", "size": int64(0)}},
		})
		expectInvalid(err, msgMemorySize)
	})

	It("requires the TLS Secret names", func() {
		Expect(k8sClient.Create(ctx, newCluster(withTLS("srv", "op", "peer")))).To(Succeed())
		Expect(k8sClient.Create(ctx, newCluster(withTLS("srv", "", "peer")))).To(Succeed())
		expectInvalid(k8sClient.Create(ctx, newCluster(withTLS("", "", "peer"))), msgServerSecretName)
		expectInvalid(k8sClient.Create(ctx, newCluster(withTLS("srv", "", ""))), msgPeerSecretName)
		expectInvalid(k8sClient.Create(ctx, newCluster(withTLS("srv", "x", "peer"), func(ec *v1alpha1.EtcdCluster) {
			ec.Spec.TLS.Client.OperatorClientSecretRef.Name = ""
		})), msgOperatorSecretName)
		// Each half of tls is optional.
		Expect(k8sClient.Create(ctx, newCluster(withTLS("srv", "", "peer"), func(ec *v1alpha1.EtcdCluster) {
			ec.Spec.TLS.Peer = nil
		}))).To(Succeed())
	})
})

var _ = Describe("EtcdCluster CEL on update", func() {
	ctx := context.Background()

	create := func(mutate ...func(*v1alpha1.EtcdCluster)) *v1alpha1.EtcdCluster {
		GinkgoHelper()
		ec := newCluster(mutate...)
		Expect(k8sClient.Create(ctx, ec)).To(Succeed())
		return ec
	}

	It("keeps storage.medium immutable in both directions", func() {
		pvc := create()
		expectInvalid(updateCluster(pvc, memory("1Gi")), msgMediumImmutable)
		mem := create(memory("256Mi"))
		expectInvalid(updateCluster(mem, func(ec *v1alpha1.EtcdCluster) {
			ec.Spec.Storage.Medium = v1alpha1.StorageMediumDefault
		}), msgMediumImmutable)
		// Unrelated changes still pass.
		Expect(updateCluster(mem, replicas(5))).To(Succeed())
	})

	It("rejects scaling a Memory cluster to 0", func() {
		mem := create(memory("256Mi"))
		expectInvalid(updateCluster(mem, replicas(0)), msgMemoryPaused)
	})

	It("lets storage.size grow or stay, never shrink", func() {
		ec := create(func(ec *v1alpha1.EtcdCluster) { ec.Spec.Storage.Size = resource.MustParse("2Gi") })
		expectInvalid(updateCluster(ec, func(ec *v1alpha1.EtcdCluster) {
			ec.Spec.Storage.Size = resource.MustParse("1Gi")
		}), msgSizeShrink)
		expectInvalid(updateCluster(ec, func(ec *v1alpha1.EtcdCluster) {
			ec.Spec.Storage.Size = resource.MustParse("2047Mi")
		}), msgSizeShrink)
		Expect(updateCluster(ec, func(ec *v1alpha1.EtcdCluster) {
			ec.Spec.Storage.Size = resource.MustParse("2048Mi")
		})).To(Succeed())
		Expect(updateCluster(ec, func(ec *v1alpha1.EtcdCluster) {
			ec.Spec.Storage.Size = resource.MustParse("3Gi")
		})).To(Succeed())
	})

	It("compares an integer size against a suffixed one", func() {
		name := uniqueName("ec-int")
		Expect(createUnstructured(map[string]any{
			"apiVersion": "etcd.etcdfleet.io/v1alpha1", "kind": "EtcdCluster",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec": map[string]any{"version": "3.6.16",
				"storage": map[string]any{"size": int64(2 << 30)}},
		})).To(Succeed())
		ref := &v1alpha1.EtcdCluster{}
		ref.Name, ref.Namespace = name, ns
		expectInvalid(updateCluster(ref, func(ec *v1alpha1.EtcdCluster) {
			ec.Spec.Storage.Size = resource.MustParse("1Gi")
		}), msgSizeShrink)
		Expect(updateCluster(ref, func(ec *v1alpha1.EtcdCluster) {
			ec.Spec.Storage.Size = resource.MustParse("2Gi")
		})).To(Succeed())
	})

	It("keeps storage.storageClassName fixed", func() {
		none := create()
		expectInvalid(updateCluster(none, func(ec *v1alpha1.EtcdCluster) {
			ec.Spec.Storage.StorageClassName = ptr.To("fast")
		}), msgSCAddRemove)

		fast := create(func(ec *v1alpha1.EtcdCluster) { ec.Spec.Storage.StorageClassName = ptr.To("fast") })
		expectInvalid(updateCluster(fast, func(ec *v1alpha1.EtcdCluster) {
			ec.Spec.Storage.StorageClassName = nil
		}), msgSCAddRemove)
		expectInvalid(updateCluster(fast, func(ec *v1alpha1.EtcdCluster) {
			ec.Spec.Storage.StorageClassName = ptr.To("slow")
		}), msgSCImmutable)
		Expect(updateCluster(fast, func(ec *v1alpha1.EtcdCluster) {
			ec.Spec.Storage.StorageClassName = ptr.To("fast")
			ec.Spec.Storage.Size = resource.MustParse("5Gi")
		})).To(Succeed())
	})

	It("keeps tls fixed: no add, no remove, no change", func() {
		plain := create()
		expectInvalid(updateCluster(plain, withTLS("srv", "", "peer")), msgTLSAddRemove)

		secure := create(withTLS("srv", "", "peer"))
		expectInvalid(updateCluster(secure, func(ec *v1alpha1.EtcdCluster) { ec.Spec.TLS = nil }), msgTLSAddRemove)
		expectInvalid(updateCluster(secure, withTLS("srv", "op", "peer")), msgTLSImmutable)
		expectInvalid(updateCluster(secure, withTLS("srv2", "", "peer")), msgTLSImmutable)
		expectInvalid(updateCluster(secure, func(ec *v1alpha1.EtcdCluster) { ec.Spec.TLS.Peer = nil }), msgTLSImmutable)
		Expect(updateCluster(secure, replicas(5))).To(Succeed())
	})

	It("lets the fields applied to new members change", func() {
		ec := create()
		Expect(updateCluster(ec, func(ec *v1alpha1.EtcdCluster) {
			ec.Spec.Version = "3.7.3" // an upgrade to another supported version
			ec.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}
			ec.Spec.Options = &v1alpha1.EtcdOptions{SnapshotCount: ptr.To[int64](5000)}
			ec.Spec.ProgressDeadlineSeconds = 900
		})).To(Succeed())
	})
})
