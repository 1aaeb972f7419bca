package e2eutil

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/config"
	"github.com/etcdfleet/etcdfleet/fleet/ctl"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
	"github.com/etcdfleet/etcdfleet/test/sandbox/objstore"
)

// RegisteredTokenTTL is the lifetime of the tokens RegisterInstall mints:
// longer than any suite runs, so that no spec sees CredentialsExpiring.
const RegisteredTokenTTL = 3 * time.Hour

// RegisterInstall installs on workload cluster c what `etcdfleetctl
// register` installs (config.WorkloadManifests: the CRDs, the manager's
// ServiceAccount, its RBAC and the admission policies) and returns a
// kubeconfig of that ServiceAccount, the credential register stores. The
// suites register clusters with it, so that they run under the policies
// and RBAC users get, never beside them. The sandbox's object store
// listens on a loopback address, which the policies refuse as an S3
// endpoint by default: it is allowed as a user would allow theirs
// (register --allowed-s3-endpoints).

func RegisterInstall(ctx context.Context, c *sandbox.Cluster) ([]byte, error) {
	cl, err := client.New(c.Config, client.Options{})
	if err != nil {
		return nil, err
	}
	manifests, err := ctl.AdmissionManifests(nil, []string{objstore.IP})
	if err != nil {
		return nil, err
	}
	if err := config.Apply(ctx, cl, "etcdfleetctl", manifests); err != nil {
		return nil, fmt.Errorf("install the workload side on %s: %w", c.Name, err)
	}
	return c.ServiceAccountKubeconfig(ctx, ctl.WorkloadNamespace, ctl.WorkloadSA, RegisteredTokenTTL)
}
