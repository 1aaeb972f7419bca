// Package operator assembles memberctl for workload clusters: the
// workload.Cluster handle (clients, recorder, etcd access, gate), the
// EtcdCluster and EtcdMember reconcilers, and every view of the kinds they
// use, derived from the one table workload.Kinds.
//
// # Setup
//
// A single-cluster operator builds its controller-runtime manager with
// ManagerOptions (Scheme, narrowed caches, uncached kinds) and calls
// SetupWithManager.
// A multicluster one (the fleet) calls SetupMulticluster on a
// multicluster-runtime manager and NewCluster for every engaged cluster,
// and configures its cluster provider with Scheme, WatchedKinds,
// AccessChecks, CacheByObject, UncachedObjects and RESTMapper.
//
// # Implementation details
//
// workload.Kinds lists each kind once with its role (For or Owns by which
// controller), its cache narrowing, whether it is cached and its REST
// scope. Watches, cache options, the static RESTMapper and the Scheme are
// derived from it here, so adding a kind is one line. The pre-flight
// access checks are every verb of workload.Permissions (the table the
// workload RBAC is generated from) but the Events' writes, with only the
// port-forward verb of the Access mode. SetupMulticluster takes the gate's
// wake-up channel and a per-EtcdCluster-reconcile callback as plain
// parameters: memberctl knows nothing of fleets.
//
// Workers are shared by every cluster, so SetupMulticluster can keep one
// cluster from holding them all: WorkersPerCluster caps each controller's
// reconciles in flight per cluster (a request over the cap returns at once
// and its cluster's next free slot wakes it through a channel source),
// ReconcileTimeout ends each reconcile's context, and NewClientWithTimeout
// builds a cluster client whose every API call ends after a timeout while
// the cache's watches keep the cluster's own.
//
// # Trade-offs
//
// Caches of Pods, PVCs, Services and PDBs hold only objects labelled
// managed-by=etcdfleet: a workload cluster with thousands of unrelated Pods
// must not grow the operator's memory. Secrets (TLS material) are read
// uncached, on demand, for the same reason. The RESTMapper is static (see
// RESTMapper), so a kind missing from the table fails at its first use.
package operator
