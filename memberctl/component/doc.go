// Package component holds one small package per kind of object the
// workload-cluster controllers own, all with the same shape, in the manner
// of etcd-druid's internal/component:
//
//   - pvc: the data PersistentVolumeClaim of an EtcdMember.
//   - pod: the bare etcd Pod of an EtcdMember, plus pure helpers that read
//     Pod status for the member reconciler.
//   - service: the headless and the client Service of an EtcdCluster (one
//     Syncer each).
//   - pdb: the PodDisruptionBudget over an EtcdCluster's voters.
//
// # Usage
//
// Each package exports New(client, inputs) returning a Syncer, and a
// pure Build that the object is created from (so it can be unit tested
// without an apiserver):
//
//	p, err := pod.New(c, opts).Sync(ctx, member)
//	_, err = pdb.New(c, voters).Sync(ctx, cluster)
//
// Syncer[O, T].Sync(ctx, owner) keeps the one object of kind T that owner
// controls as the operator wants it and returns it. The client is an input
// of New rather than of Sync because the controllers run per workload
// cluster and hold one client per cluster.
//
// # Implementation details
//
// Every package describes its object to the one implementation of the
// pattern, Ensure (and Remove, for the budget of a cluster without voters),
// with an Object: the desired object, a Repair that copies the fields the
// operator owns, and an optional BeforeCreate check. Ensure reads the
// current object, creates it with a controller ownerRef when missing, and
// otherwise merge-patches exactly what Repair changed, and only when it
// changed something, so that a steady-state reconcile makes no writes.
//
// The reverse of the ownerRef is a rule: an existing object whose controller
// is not the owner passed to Sync is never modified, deleted or adopted.
// Sync returns a *ForeignError (errors.Is ErrForeign) instead. The usual
// cause is a previous incarnation of the owner, with the same name and a
// different UID, whose objects the garbage collector has not removed yet;
// taking such a PVC over would hand a new member the data dir of a member
// that etcd has already forgotten.
//
// Sync never waits; the caller requeues on error. Names and URLs come from
// memberctl/etcd, which the reconcilers share.
//
// # Trade-offs
//
// Server-side apply with a field manager was the alternative, and it was
// not taken, for four reasons:
//
//   - Steady state would not be free. An apply is a PATCH request on every
//     reconcile, which the apiserver decodes, admits and diffs against the
//     managed fields even when nothing changes; across a fleet of clusters
//     resynced every few minutes that is a constant write load. Ensure reads
//     from the informer cache and sends nothing when Repair reports no
//     change, which the specs check with a request counter.
//   - Apply does not refuse foreign objects: applying an ownerRef to an
//     object someone else owns adopts it (or fails on a second controller
//     ref). A Get and the ControlledBy check are needed first anyway.
//   - The Pod's spec is immutable and fixed at creation. Applying the full
//     Pod would fail once Build changes (a new operator version), and
//     applying only the role label with the same field manager would drop
//     the spec fields that manager owned; the Pod would need a create path
//     and a second manager.
//   - Repairs must also remove values other writers set: the budget's old
//     maxUnavailable, a stray Service port. Apply leaves fields owned by
//     another manager in place, so these would still need hand-written
//     patches.
//
// The cost of the chosen shape is that each kind lists the fields it owns in
// Repair by hand. They are few (labels, selector, ports, minAvailable and
// the role label) and the specs in this package check each one.
package component
