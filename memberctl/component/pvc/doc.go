// Package pvc manages the data PersistentVolumeClaim of an EtcdMember,
// data-<member>.
//
// The claim carries a controller ownerRef to its member, so replacing a
// member (deleting the EtcdMember) garbage-collects its data dir with it:
// a member that etcd has removed must never come back on its old data.
// For the same reason Sync refuses a claim of that name controlled by any
// other UID (component.ErrForeign) rather than adopting it.
//
// Memory-backed members (spec.storage.medium: Memory) have no claim; their
// data lives on a tmpfs emptyDir that the pod package builds.
//
// The claim is never resized or otherwise updated after creation: a
// member's spec is not re-templated, and storage class and access mode of a
// bound claim are immutable anyway.
package pvc
