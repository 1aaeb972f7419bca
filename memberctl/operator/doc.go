// Package operator assembles memberctl for one workload cluster: the
// workload.Cluster handle (clients, recorder, etcd access, gate) and the
// EtcdCluster and EtcdMember reconcilers.
//
// # Setup
//
// A single-cluster operator calls SetupWithManager on a controller-runtime
// manager whose cache was narrowed with CacheByObject. The fleet layer calls
// NewCluster for every engaged cluster and wires the same reconcilers
// through multicluster-runtime.
//
// # Trade-offs
//
// Caches of Pods, PVCs, Services and PDBs hold only objects labelled
// managed-by=etcdfleet: a workload cluster with thousands of unrelated Pods
// must not grow the operator's memory. Secrets (TLS material) are read
// uncached, on demand, for the same reason.
package operator
