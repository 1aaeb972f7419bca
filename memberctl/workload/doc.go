// Package workload describes one workload cluster to the memberctl
// reconcilers: its clients, event recorder, etcd access and replacement
// gate. memberctl knows nothing of fleets; the fleet layer hands a Cluster
// per engaged cluster through a Source, and a single-cluster operator hands
// the same Cluster every time (Static).
//
// Kinds is the one table of the kinds the reconcilers use in a workload
// cluster (watches, caching, REST scope); memberctl/operator derives every
// other view of them from it, and SetupController registers a reconciler
// with its watches on a single-cluster manager.
package workload
