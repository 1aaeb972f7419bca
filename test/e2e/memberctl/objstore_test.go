package memberctl_test

import (
	"context"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
	"github.com/etcdfleet/etcdfleet/test/sandbox/objstore"
)

// objectStore starts real object storage (SeaweedFS) for the current spec
// with a bucket "backups", and creates namespace ns of the sandbox cluster
// with the Secret "s3" holding its credentials. Both go after the spec.
func objectStore(ctx context.Context, cluster, ns string) *objstore.Server {
	GinkgoHelper()
	dir, err := os.MkdirTemp("", "objstore-")
	Expect(err).NotTo(HaveOccurred())
	s3, err := objstore.Start(ctx, dir)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { s3.Stop(); _ = os.RemoveAll(dir) })
	Expect(s3.MakeBucket(ctx, "backups")).To(Succeed())
	namespace(ctx, cluster, ns)
	Expect(clients[cluster].Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s3"},
		StringData: map[string]string{agent.AccessKeyIDKey: s3.AccessKey, agent.SecretAccessKeyKey: s3.SecretKey}})).To(Succeed())
	return s3
}
