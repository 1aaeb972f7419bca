// Package v1alpha1 holds the workload-cluster API of etcdfleet: the
// etcd.etcdfleet.io/v1alpha1 kinds EtcdCluster and EtcdMember.
//
// An EtcdCluster is what a user writes. The cluster controller latches the
// parts of its spec that shape new members into status.observed and creates
// one EtcdMember per etcd member from that latched copy; a member's spec is
// never re-templated afterwards. The member controller turns an EtcdMember
// into a PVC and a Pod.
//
// constants.go holds the labels, annotations, finalizer, condition types and
// reasons the controllers share.
//
// +kubebuilder:object:generate=true
// +groupName=etcd.etcdfleet.io
package v1alpha1
