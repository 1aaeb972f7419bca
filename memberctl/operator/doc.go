// Package operator assembles memberctl for workload clusters: the
// workload.Cluster handle (clients, recorder, etcd access, gate), the
// EtcdCluster and EtcdMember reconcilers, and every view of the kinds they
// use, derived from the one table workload.Kinds.
//
// # Setup
//
// Every operator calls Setup on a multicluster-runtime manager: one table
// of the reconcilers (controllers), each registered once with its watches
// from workload.Kinds. The fleet gives the manager its cluster provider,
// builds a workload.Cluster with NewCluster for every engaged cluster, and
// configures the provider with Scheme, WatchedKinds, AccessChecks,
// CacheByObject, UncachedObjects and RESTMapper. A single-cluster operator
// (the e2e suites' e2eutil.StartOperator) builds the manager without a
// provider and with ManagerOptions, so that the same controllers engage
// its local cluster, and hands them NewLocalCluster's handle through
// workload.Static. Adding a reconciler is one row in controllers and its
// kinds in workload.Kinds.
//
// # Implementation details
//
// workload.Kinds lists each kind once with its role (For or Owns by which
// controller), its cache narrowing, whether it is cached and its REST
// scope. Watches, cache options, the static RESTMapper and the Scheme are
// derived from it here, so adding a kind is one line. The pre-flight
// access checks are every verb of workload.Permissions (the table the
// workload RBAC is generated from) but the Events' writes, with only the
// port-forward verb of the Access mode. Setup takes the gate's
// wake-up channel and a per-EtcdCluster-reconcile callback as plain
// options: memberctl knows nothing of fleets. Options.withDefaults is
// where defaults are applied: a part's options given as zero take that
// part's DefaultOptions whole.
//
// Workers are shared by every cluster, so Setup can keep one
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
