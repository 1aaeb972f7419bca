// Package replace benchmarks the single-cluster operator's reaction to a
// graceful node shutdown: how long after the apiserver shows a member Pod
// Succeeded or Failed the replacement Pod is created (goal: p50 ≤ 100 ms),
// and how long after a whole-cluster reboot the EtcdCluster is Available
// again. See BenchmarkDetectReplace. BenchmarkPowerLossReplace times the
// hard power-loss path of a memory member: the data-dir guard reporting
// DataDirLost → the Pod of the new member that replaces it.
package replace
