// Package app wires the fleet: a multicluster-runtime manager on the
// management cluster, the kubeconfig-Secret provider that engages workload
// clusters, the memberctl reconcilers run for every engaged cluster, the
// shared replacement limiter, and the dashboard writer.
//
// # Setup
//
//	f, err := manager.New(restConfig, cfg) // cfg from package config
//	err = f.Start(ctx)
//
// # Implementation details
//
//   - One EtcdMember and one EtcdCluster controller serve all clusters
//     (multicluster-runtime shares one queue); every controller option is
//     set explicitly because v0.24.1 ignores the manager-wide defaults.
//   - The registry turns each engaged cluster into a workload.Cluster whose
//     Gate is the shared limiter, whose Paused reads the Secret annotation
//     and the Fleet object, and whose Context ends on disengagement so
//     in-flight reconciles for a removed cluster stop.
//   - The limiter's grants wake the waiting member at once through a channel
//     source; the requeue-after is only the fallback.
//   - The dashboard is told of every cluster state change and of limiter
//     grants; it coalesces its writes.
//
// # Trade-offs
//
// One active replica (leader election): the limiter is in-process, so
// several active replicas would each pace on their own.
package app
