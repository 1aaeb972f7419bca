// Package workload describes one workload cluster to the memberctl
// reconcilers: its clients, event recorder, etcd access and replacement
// gate. memberctl knows nothing of fleets; the fleet layer hands a Cluster
// per engaged cluster through a Source, and a single-cluster operator hands
// the same Cluster every time (Static).
package workload
