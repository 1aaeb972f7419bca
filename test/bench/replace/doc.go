// Package replace benchmarks the single-cluster operator's reaction to a
// graceful node shutdown: how long after the apiserver shows a member Pod
// Succeeded or Failed the replacement Pod is created (goal: p50 ≤ 100 ms),
// and how long after a whole-cluster reboot the EtcdCluster is Available
// again. See BenchmarkDetectReplace.
package replace
