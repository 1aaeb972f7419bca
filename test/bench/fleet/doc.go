// Package fleet benchmarks the fleet manager healing a whole fleet after
// every node of every workload cluster rebooted at once, against the lower
// bound the shared replacement limiter allows (goal: within 1.2× of it).
// See BenchmarkFleetHeal.
package fleet
