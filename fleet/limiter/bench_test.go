package limiter

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

// BenchmarkReserve measures Reserve under contention: parallel reconcilers
// for 500 clusters of 3 members, with tokens scarce so most calls queue and
// take the fair-position estimate, the costly path.
func BenchmarkReserve(b *testing.B) {
	const clusters, members = 500, 3
	reqs := make([]gate.Request, 0, clusters*members)
	for c := range clusters {
		for m := range members {
			reqs = append(reqs, req(fmt.Sprintf("c%03d", c), m))
		}
	}
	l := New(Options{Rate: 1000, Burst: 50, OnGrant: func(gate.Request) {}})
	var next atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(7919) % uint64(len(reqs))
			reserve(l, reqs[i])
		}
	})
}
