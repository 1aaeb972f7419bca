// Package app wires the fleet: a multicluster-runtime manager on the
// management cluster, the kubeconfig-Secret provider that engages workload
// clusters, the memberctl reconcilers run for every engaged cluster, the
// shared replacement limiter, and the dashboard writer.
//
// # Setup
//
//	f, err := app.New(restConfig, cfg) // cfg from config/settings
//	err = f.Start(ctx)
//
// # Implementation details
//
//   - The provider is generic; this package fills its options: the
//     registration label, key and paused annotation from fleet/api/v1alpha1,
//     and the Scheme, watched kinds, access checks, cache narrowing and
//     RESTMapper from memberctl/operator (derived from workload.Kinds).
//   - operator.SetupMulticluster registers one EtcdMember and one
//     EtcdCluster controller for all clusters (multicluster-runtime shares
//     one queue).
//   - Each part's options come from config/settings, whose defaults are the
//     parts' own Default* values (a test checks the mapping keeps them).
//   - The registry turns each engaged cluster into a workload.Cluster whose
//     Gate is the shared limiter, whose Paused reads the Secret annotation
//     and the Fleet object, and whose Context ends on disengagement so
//     in-flight reconciles for a removed cluster stop.
//   - The limiter's grants wake the waiting member at once through a channel
//     source; the requeue-after is only the fallback.
//   - The dashboard is told of every cluster state change, of limiter
//     grants and of every EtcdCluster reconcile; it coalesces its writes.
//   - The limiter's etcdfleet_limiter_* series are registered on
//     controller-runtime's metrics registry while the manager runs.
//   - Sharded mode (sharding.enabled, shard.go): multicluster-runtime's
//     sharded coordinator is the provider's Options.Ownership, so a replica
//     connects only to the clusters it owns (HRW over the live replicas,
//     one fence Lease mcr-shard-<cluster> each, in the registration
//     namespace). peers.go is its peer registry (Leases mcr-peer-<id>),
//     timed by sharding.leaseDuration rather than mcr's fixed 30 s. The
//     Secret controller, the provider, the reconcilers, the limiter and the
//     dashboard's FleetCluster writes run on every replica; leader
//     election still picks the one that writes the Fleet and deletes
//     orphaned FleetClusters. shareKeeper counts the clusters engaged here
//     and sets the limiter's share of the fleet-wide rate and burst
//     (fleet/limiter, "Across replicas").
//
// # Trade-offs
//
// Without sharding, one replica is active (leader election) and the
// others stand by; with it, every replica is active on its own clusters.
// Sharding costs limiter fairness across replicas (each paces its share),
// makes a cluster whose replica dies wait up to one fence lease duration
// plus a sync interval, plus its connection time, and at cold start lets
// the first replica up take clusters that the next ones then take back
// (never two at once: the fences). Ownership assumes the replicas' clocks
// agree to well under the lease duration, as Lease-based election does.
package app
