package dashboard

import (
	"testing"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
)

// TestReplicaSharesCountTheRows: the Fleet's status.replicas counts the
// rows by the replica each names, sorted by name, and rows naming none as
// unowned.
func TestReplicaSharesCountTheRows(t *testing.T) {
	row := func(replica string) clusterRow {
		return clusterRow{Status: &fleetv1.FleetClusterStatus{Replica: replica}}
	}
	shares, unowned := replicaShares([]clusterRow{row("r2"), row("r1"), row(""), row("r2"), row("r2")})
	want := []fleetv1.ReplicaShare{{Name: "r1", Clusters: 1}, {Name: "r2", Clusters: 3}}
	if len(shares) != len(want) || shares[0] != want[0] || shares[1] != want[1] || unowned != 1 {
		t.Fatalf("replicaShares = %+v, %d unowned; want %+v, 1 unowned", shares, unowned, want)
	}
}
