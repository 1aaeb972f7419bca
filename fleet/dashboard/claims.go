package dashboard

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
)

// RecordedClaims returns the names of the FleetClusters in namespace whose
// status records the workload cluster identity id: the provider's
// RecordedClaims. The FleetClusters persist each registration's identity,
// refused duplicates included, where every replica and every restart reads
// it, so that a claim is decided the same way everywhere (security review
// L8) instead of by whichever Secret passed pre-flight first in one
// process. A FleetCluster is named after its Secret.
func RecordedClaims(ctx context.Context, r client.Reader, namespace, id string) ([]string, error) {
	var list fleetv1.FleetClusterList
	if err := r.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	var names []string
	for _, fc := range list.Items {
		if fc.Status.ClusterID == id {
			names = append(names, fc.Name)
		}
	}
	return names, nil
}
