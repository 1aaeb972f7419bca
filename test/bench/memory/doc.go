// Package memory benchmarks the fleet manager's memory per additional engaged
// workload cluster, with no unrelated Pods and with 2,000 per cluster
// (goal: ≤ 2 MiB per cluster, and flat). See BenchmarkManagerMemory.
//
// The manager runs in the test process and is measured there; the sandbox
// (whose simulated kubelet caches every Pod in Go memory) runs in a child
// process, the same test binary started in sandbox mode by TestMain.
package memory
