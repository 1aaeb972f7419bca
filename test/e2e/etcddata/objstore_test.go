package etcddata_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox/objstore"
)

// objectStore starts real object storage (SeaweedFS) for the current spec
// with a bucket "backups", and creates namespace ns of the sandbox cluster
// with the Secret "s3" holding its credentials. Both go after the spec.
func objectStore(ctx context.Context, cluster, ns string) *objstore.Server {
	GinkgoHelper()
	s3 := e2eutil.StartObjectStore(ctx, "backups")
	sb.Namespace(ctx, cluster, ns)
	Expect(clients[cluster].Create(ctx, e2eutil.S3Secret(ns, s3))).To(Succeed())
	return s3
}
