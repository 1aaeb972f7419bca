// Package component holds one small package per kind of object the
// workload-cluster controllers own, each with the same shape, in the manner
// of etcd-druid's internal/component:
//
//   - pvc: the data PersistentVolumeClaim of an EtcdMember.
//   - pod: the bare etcd Pod of an EtcdMember, plus pure helpers that read
//     Pod status for the member reconciler.
//   - service: the headless and the client Service of an EtcdCluster.
//   - pdb: the PodDisruptionBudget over an EtcdCluster's voters.
//
// Every package exposes a Sync function taking a context, a client and the
// owning object. Sync reads the current object, creates it when missing, and
// otherwise changes only the fields the operator owns, and only when they
// differ, so that a steady-state reconcile makes no writes. Each also
// exports the pure Build that Sync creates from, so that the object can be
// unit tested without an apiserver.
//
// Objects are created with a controller ownerRef to their owner, so that
// deleting the owner garbage-collects them. The reverse is a rule: an
// existing object whose controller is not the owner passed to Sync is never
// modified or adopted. Sync returns a *ForeignError (errors.Is ErrForeign)
// instead. The usual cause is a previous incarnation of the owner, with the
// same name and a different UID, whose objects the garbage collector has not
// removed yet; taking such a PVC over would hand a new member the data dir of
// a member that etcd has already forgotten.
//
// Sync functions never delete what they do not own and never wait; the
// caller requeues on error. This package holds what the subpackages share:
// the ownership check, the foreign-object error and the port names. Names
// and URLs come from the naming package, which the reconcilers share.
package component
