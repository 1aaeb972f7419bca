// Package bench holds what etcdfleet's end-to-end benchmarks share: an
// apiserver-side Pod recorder that turns watch events into replacement
// timings, percentiles, polling, environment knobs and sandbox start-up
// with guaranteed teardown. The benchmarks themselves live in one package
// each, so that each runs in its own test binary:
//
//   - replace: single-cluster detect→replace latency (terminal Pod seen on
//     the apiserver's watch → replacement Pod ADDED), p50 and p99, and the
//     time from a reboot to the EtcdCluster being Available again. Goal:
//     p50 ≤ 100 ms.
//   - fleet: fleet heal time after rebooting every node of N workload
//     clusters at once (from the first Pod seen terminal; from the reboot
//     call too), against the shared limiter's lower bound
//     (3N − burst)/rate + etcd start. Goal: ratio ≤ 1.2. Beside it, the
//     client-visible unavailability: a lincheck workload on every cluster
//     reports the longest time between two successful writes, p50 and max
//     over clusters (what a user of the workload cluster feels), and its
//     history is checked for linearizability. Each replacement's time is
//     broken down (terminal → limiter ask, limiter wait, grant → delete,
//     delete → create, create → Ready; p50, p99, max), the worst 1 s
//     window of deletes across all replicas is counted from the
//     apiservers' watches, and a cluster's RSS at rest is printed.
//     It runs twice by default, with one manager and with three sharded
//     ones owning the clusters at least 4:1:1 (BENCH_REPLICAS=1,3).
//   - memory: the fleet manager's heap per additional engaged cluster
//     (the process's one-off costs apart; the average with them and RSS
//     printed beside it), with 0 and with 2,000 unrelated Pods per
//     cluster. Goal: ≤ 2 MiB and flat.
//   - scale: BENCH_SCALE_CLUSTERS (default 100) lite clusters (apiservers
//     on one etcd, watch cache off, trimmed by sandbox.DefaultLiteKnobs)
//     registered at once, with one manager and with three sharded ones:
//     time to all Connected, heap, RSS and goroutines per cluster, API
//     requests (and probes) per cluster per minute at rest (make
//     bench-scale). BenchmarkLiteAPIServer measures each knob's saving.
//
// # Usage
//
// make bench runs the packages one at a time (go test -p 1): each times
// the product on a shared 2-core machine, and two at once (go test's
// default) ran the sharded fleet heal beside the memory bench's 10,000
// Pod creates, at a load of 16-27 instead of about 9.
//
//	make bench
//	KUBEBUILDER_ASSETS=$(test/tools/assets.sh) go test -run '^$' -bench BenchmarkFleetHeal -benchtime 1x ./test/bench/...
//
// Knobs (environment): BENCH_REBOOTS (replace, default 10), BENCH_CLUSTERS
// and BENCH_REPLICAS (fleet, defaults 10 and "1,3": one run per entry), BENCH_SCALE_CLUSTERS,
// BENCH_SCALE_WINDOW_SECONDS and BENCH_SCALE_APISERVER_MIB (scale),
// BENCH_LITE_APISERVERS (BenchmarkLiteAPIServer, default 3),
// BENCH_MEMORY_CLUSTERS and BENCH_MEMORY_PODS (memory, defaults 5 and
// 2000), BENCH_MEMORY_PROFILE=dir (memory: heap and goroutine profiles of
// each reading, for go tool pprof -base), BENCH_VERBOSE=1 to see the
// controllers' (and lite apiservers') logs.
//
// # Implementation details
//
// Every figure is printed with b.ReportMetric (machine-readable, for
// benchstat) and as a human-readable summary with the product goal beside
// it, on stdout (Logf: the testing package keeps only 10 lines of b.Logf
// per benchmark), ending with the host's load average: the machine is
// shared, and a timing taken under load should say so. The goals are
// printed, never asserted: a benchmark fails only when
// the system does not heal at all, or (fleet) a client history is not
// linearizable. Each benchmark does one experiment
// whatever b.N is (run them with -benchtime 1x) and reports ns/op as 0.
//
// # Trade-offs
//
//   - One package per benchmark: controller-runtime keeps a process-wide
//     registry of controller names, so two fleet managers cannot be built
//     in one test binary. `go test -bench` runs package binaries one after
//     another, so the benchmarks never compete for the 2 cores.
//   - Timings come from this process's watch of the apiserver, so they
//     include watch delivery (sub-millisecond on loopback) on both ends.
package bench
