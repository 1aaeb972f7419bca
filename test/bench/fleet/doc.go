// Package fleet benchmarks the fleet manager healing a whole fleet after
// every node of every workload cluster rebooted at once, against the lower
// bound the shared replacement limiter allows (goal: within 1.2× of it),
// and what clients of each cluster saw meanwhile: the longest gap between
// two successful writes (p50 and max over clusters), in a history checked
// for linearizability.
// See BenchmarkFleetHeal.
package fleet
