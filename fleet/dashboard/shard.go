package dashboard

import (
	"cmp"
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
)

// leading reports whether this replica writes the Fleet and collects
// orphans: always without sharding (the whole writer is leader-elected),
// and once elected with it.
func (w *Writer) leading() bool {
	if !w.opts.Sharded || w.electedCh == nil {
		return true
	}
	select {
	case <-w.electedCh:
		return true
	default:
		return false
	}
}

// disown forgets a cluster another replica owns now: that replica writes
// its FleetCluster, and the Fleet reads it from there.
func (w *Writer) disown(key string) {
	if _, known := w.latest[key]; known {
		delete(w.latest, key)
		forgetCluster(key)
		w.enqueue(fleetRequest)
	}
}

// writtenElsewhere returns the status the owning replica wrote for info's
// cluster, from the cache, or nil when there is none yet.
func (w *Writer) writtenElsewhere(ctx context.Context, info ClusterInfo) *fleetv1.FleetClusterStatus {
	var fc fleetv1.FleetCluster
	if err := w.c.Get(ctx, types.NamespacedName{Namespace: info.Namespace, Name: info.Name}, &fc); err != nil {
		return nil
	}
	return &fc.Status
}

// replicaShares counts the clusters each replica reports owning (their
// FleetClusters' status.replica), by replica name, and those owned by none.
func replicaShares(rows []clusterRow) ([]fleetv1.ReplicaShare, int32) {
	counts := map[string]int32{}
	var unowned int32
	for _, r := range rows {
		if r.Status.Replica == "" {
			unowned++
			continue
		}
		counts[r.Status.Replica]++
	}
	out := make([]fleetv1.ReplicaShare, 0, len(counts))
	for name, n := range counts {
		out = append(out, fleetv1.ReplicaShare{Name: name, Clusters: n})
	}
	slices.SortFunc(out, func(a, b fleetv1.ReplicaShare) int { return cmp.Compare(a.Name, b.Name) })
	return out, unowned
}
