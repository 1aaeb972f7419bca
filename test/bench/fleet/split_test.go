package fleet

import (
	"fmt"
	"slices"

	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/sharder"
)

// A real fleet's demand is uneven: a power event hits some sites and not
// others, and rendezvous hashing gives replicas unequal counts. The bench
// makes that the case to measure: with BENCH_REPLICAS > 1 it picks the
// replicas' IDs so that the busiest replica owns at least twice as many of
// the clusters as all the others together (4:1:1 or steeper with three).
// A split by owned-cluster count would then leave most of the fleet's
// budget idle on the replicas whose clusters are healed; a share that
// follows demand (fleet/limiter FleetShare) must not.

// unevenReplicaIDs returns n replica IDs under which sharder.HRW, the
// sharded coordinator's choice, gives one replica at least twice the
// clusters of all the others together and every replica at least one, and
// the clusters each would own. It tries the IDs r1-k … rn-k for k = 0, 1, …
func unevenReplicaIDs(n int, clusters []string) ([]string, map[string][]string, error) {
	hrw := sharder.NewHRW()
	for k := range 10000 {
		ids := make([]string, n)
		peers := make([]sharder.PeerInfo, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("r%d-%d", i+1, k)
			peers[i] = sharder.PeerInfo{ID: ids[i]}
		}
		owned := map[string][]string{}
		for _, c := range clusters {
			for _, p := range peers {
				if hrw.ShouldOwn(c, peers, p) {
					owned[p.ID] = append(owned[p.ID], c)
				}
			}
		}
		counts := make([]int, 0, n)
		for _, id := range ids {
			counts = append(counts, len(owned[id]))
		}
		slices.Sort(counts)
		rest := 0
		for _, c := range counts[:n-1] {
			rest += c
		}
		if counts[0] >= 1 && counts[n-1] >= 2*rest {
			return ids, owned, nil
		}
	}
	return nil, nil, fmt.Errorf("no replica IDs give %d clusters a split of at least 4:1:1 over %d replicas", len(clusters), n)
}
