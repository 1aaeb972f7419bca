package app

import (
	"context"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// releaseDrainTimeout bounds how long a fence release waits for this
// replica's requests in flight to the cluster. Draining takes
// milliseconds; a request the workload apiserver holds longer (one that
// ignores its context is bounded by the provider's RESTTimeout, 30 s) is
// not worth holding the fence for, since the next owner waits on it: the
// release goes ahead, and the fence e2e would show that request.
const releaseDrainTimeout = 5 * time.Second

// quiescingReleases wraps the sharded coordinator's client so that a
// fence release (multicluster-runtime's leaseGuard.Release: an Update of
// the Lease <prefix><cluster> in ns that clears its holder) first calls
// quiesce for the cluster. mcr v0.24.1 releases a fence concurrently with
// cancelling the engagement it guards (#172); without this, a reconcile's
// write or an Event already under way reached the cluster after the
// release, under the next owner's fence, as the sharding e2e's audit-log
// proof once found. Fence names are prefix + sanitize.DNS1123(cluster),
// which is the cluster's name itself: clusters are named by their
// registration Secrets, which are DNS-1123 names.
func quiescingReleases(c client.WithWatch, ns, prefix string, quiesce func(context.Context, string) error) client.WithWatch {
	log := ctrl.Log.WithName("sharding")
	return interceptor.NewClient(c, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if cluster, ok := releasedFence(obj, ns, prefix); ok {
				qctx, cancel := context.WithTimeout(ctx, releaseDrainTimeout)
				if err := quiesce(qctx, cluster); err != nil {
					log.Info("Releasing the fence with requests to the cluster still in flight", "cluster", cluster, "waited", releaseDrainTimeout, "error", err.Error())
				}
				cancel()
			}
			return c.Update(ctx, obj, opts...)
		},
	})
}

// releasedFence tells whether obj is a fence Lease whose holder is being
// cleared, and names its cluster.
func releasedFence(obj client.Object, ns, prefix string) (string, bool) {
	l, ok := obj.(*coordinationv1.Lease)
	if !ok || l.Namespace != ns {
		return "", false
	}
	cluster, ok := strings.CutPrefix(l.Name, prefix)
	if !ok || cluster == "" || (l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "") {
		return "", false
	}
	return cluster, true
}
