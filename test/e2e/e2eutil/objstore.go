package e2eutil

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

// StartObjectStore starts real object storage (SeaweedFS) in a new
// temporary directory and creates bucket in it. The store is stopped and
// its directory removed when the node that called it ends (DeferCleanup),
// so it serves a spec, an Ordered container (BeforeAll) or the suite
// (BeforeSuite).
func StartObjectStore(ctx context.Context, bucket string) *objstore.Server {
	GinkgoHelper()
	dir, err := os.MkdirTemp("", "objstore-")
	Expect(err).NotTo(HaveOccurred())
	s3, err := objstore.Start(ctx, dir)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { s3.Stop(); _ = os.RemoveAll(dir) })
	Expect(s3.MakeBucket(ctx, bucket)).To(Succeed())
	return s3
}

// S3Secret is the Secret "s3" in ns holding s3's credentials under the
// keys the snapshot agent reads, for an EtcdCluster's S3 location to
// name; the caller creates it.
func S3Secret(ns string, s3 *objstore.Server) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s3"},
		StringData: map[string]string{agent.AccessKeyIDKey: s3.AccessKey, agent.SecretAccessKeyKey: s3.SecretKey}}
}

// ObjectStore starts real object storage (StartObjectStore) for the
// calling node with a bucket "backups", and creates namespace ns of
// cluster with the Secret "s3" (S3Secret) holding its credentials, for
// snapshots and restores to name.
func (s *OperatedSandbox) ObjectStore(ctx context.Context, cluster, ns string) *objstore.Server {
	GinkgoHelper()
	s3 := StartObjectStore(ctx, "backups")
	s.Namespace(ctx, cluster, ns)
	Expect(s.Clients[cluster].Create(ctx, S3Secret(ns, s3))).To(Succeed())
	return s3
}
