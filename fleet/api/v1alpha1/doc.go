// Package v1alpha1 holds the management-cluster API of etcdfleet: the
// fleet.etcdfleet.io/v1alpha1 kinds FleetCluster and Fleet.
//
// A FleetCluster mirrors one workload-cluster registration Secret (same
// namespace and name; the Secret holds every input, the FleetCluster only
// reports). The Fleet is the cluster-scoped singleton named "fleet": its
// spec pauses every destructive action fleet-wide and its status
// aggregates the FleetClusters and the shared replacement limiter.
//
// +kubebuilder:object:generate=true
// +groupName=fleet.etcdfleet.io
package v1alpha1
