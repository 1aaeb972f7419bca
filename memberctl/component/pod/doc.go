// Package pod builds and syncs the bare etcd Pod of an EtcdMember, and reads
// Pod status for the member reconciler.
//
// Members run as bare Pods, one per EtcdMember and named after it, not as a
// StatefulSet: the operator decides when a Pod is replaced, because a
// replacement may need an etcd membership change first.
//
// Build is pure: it turns a member into a Pod spec, including the etcd
// command line. Sync creates the Pod when it is missing. On an existing Pod
// it only keeps the role label in step with status.isVoter (the
// PodDisruptionBudget selects voters by it); everything else about a running
// Pod is fixed at creation (a Pod spec is immutable), and replacing a Pod is
// the member reconciler's decision, not Sync's. Build stamps the Pod with
// TemplateHash of the member spec it was built from (resources, affinity,
// topologySpreadConstraints, options), so that the member reconciler can
// tell a Pod that runs an old template after its member was re-templated.
//
// Two choices in the Pod are deliberate:
//
//   - --initial-cluster-state is "new" only for the seed (spec.bootstrap)
//     that has never been seen running (no status.memberID) in a cluster
//     that has never formed (no clusterID). A seed that lost its data dir
//     afterwards must fail loudly with "existing" rather than silently
//     bootstrap a fresh one-member cluster that would pass readiness.
//   - The restore init container (restore.go) runs on the same condition,
//     for a seed with spec.restore: only the seed's first Pod of a cluster
//     never formed restores, so a later Pod never rewrites a live member's
//     data under its old ID from an old snapshot. It follows the data-dir
//     guard, which must see the Pod's first start as a first start.
//   - Liveness is a TCP check of the peer port, not etcd's /health, which
//     fails without quorum: a quorum-aware liveness probe would let a network
//     partition restart every member on the minority side, and then on both.
//     Readiness does use /health, so that Services and the PDB see the truth.
//
// IsTerminal, IsShutdownTermination, IsReady, OwnedBy, EtcdContainerStuck
// and TerminationReason are small pure predicates over a Pod that the member
// reconciler uses to decide whether to replace it.
package pod
