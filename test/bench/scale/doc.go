// Package scale is the fleet's scale benchmark: BENCH_SCALE_CLUSTERS
// (default 100) workload clusters registered at once, with one manager
// in process and then with three sharded manager processes.
//
// A cluster is the lightest real form found: a kube-apiserver with the
// watch cache off, storing under its own --etcd-prefix in one etcd shared
// by all (sandbox.StartLite), with no controller-manager, kubelet or
// Nodes, and trimmed by sandbox.DefaultLiteKnobs: only the API groups
// etcdfleet uses, priority and fairness off, few admission plugins and a
// lower GOGC. BenchmarkLiteAPIServer measures what each knob saves. The
// knobs' GOMEMLIMIT is left out here: under the manager's requests a
// hundred apiservers at their memory limit ran their collectors back to
// back and starved the run (BENCH_SCALE_GOMEMLIMIT sets one). Each
// apiserver runs at nice 10 with GOMAXPROCS 1 (BENCH_SCALE_NICE,
// BENCH_SCALE_GOMAXPROCS): in a real fleet it has a machine of its own,
// and here it must not take the CPU of the manager being measured.
// Before starting anything the benchmark checks that N apiservers fit in
// the host's available memory, and skips saying which N would. An idle
// cluster asks nothing else of the manager: discovery, access checks,
// list/watch of the cached kinds, and a probe every
// clusters.probeInterval. Apiservers start four at a time, and the
// manager connects at most clusters.maxConcurrentConnects at once.
//
// It reports the time from registering to all Connected and the
// apiservers' CPU time over it per cluster; per cluster the
// in-process manager's heap (after GC) and RSS beyond its idle figures,
// its goroutines, and the API requests each apiserver served at rest over
// BENCH_SCALE_WINDOW_SECONDS (default 60, the bench's own scrapes
// excluded), and of them the manager's probes (per probe tick); the
// apiservers keep audit logs, from which the same requests are listed by
// sender (the manager's user agent says which part of it sent one), verb
// and path. For three replicas it reports the total RSS and heap of the
// processes over the clusters. Figures go to docs/performance.md.
//
//	make bench-scale
//	BENCH_SCALE_CLUSTERS=30 make bench-scale
package scale
