// Package fleet benchmarks the fleet manager healing a whole fleet after
// every node of every workload cluster rebooted at once, against the lower
// bound the shared replacement limiter allows (goal: within 1.2× of it),
// and what clients of each cluster saw meanwhile: the longest gap between
// two successful writes (p50 and max over clusters), in a history checked
// for linearizability. Each replacement's time is broken down at the
// limiter's grant, so that extra heal time can be put down to pacing, the
// controller or a saturated machine; the managers run as processes
// (test/managerproc), one run per entry of BENCH_REPLICAS (default 1 and
// 3), sharded when more than one.
// The heal is drawn as make demo draws it (test/timeline), to
// $BENCH_TIMELINE. See BenchmarkFleetHeal.
package fleet
