// Package etcdmember is the EtcdMember reconciler: it keeps one etcd member's
// PVC and bare Pod, and replaces the Pod, or the whole member, when the
// kubelet will not bring it back.
//
// # Setup
//
// One Reconciler serves any number of workload clusters: each request names
// its cluster, and a workload.Source hands back that cluster's clients,
// recorder, etcd access and replacement gate. memberctl/operator.Setup
// wires it, for a fleet's engaged clusters or a single local one alike.
//
// # Usage
//
// The EtcdCluster reconciler creates EtcdMembers and sets
// spec.initialCluster; this reconciler then creates the member's PVC and
// Pod, discovers its etcd member ID and reports Ready. On deletion its
// finalizer removes the member from etcd through the voters.
//
// # Implementation details
//
// There are three kinds of replacement, and one flow (replace, in
// flow.go) carries all of them out:
//
//   - terminal Pod: a Pod left Succeeded or Failed (what a graceful node
//     shutdown leaves) is deleted and recreated on the same PVC; etcd
//     resumes under the same member ID because its data directory is intact.
//     The successor is created in the reconcile that deletes the old Pod
//     (recreateTerminalPod): the apiserver removes a terminal Pod at once,
//     and the deletion's watch event took 0.8 s p50 and 2.5 s p99 to bring
//     the next reconcile during a fleet heal. A later reconcile whose cache
//     still holds the deleted Pod leaves it alone (deletedByUs);
//   - crash loop: a member whose etcd keeps crashing is deleted, and the
//     cluster reconciler adds a new member with a new ID;
//   - pod loss: a memory-backed member whose Pod is gone (or was replaced by
//     another UID) lost its data with its tmpfs, so it too is deleted and
//     replaced by a new member. A tmpfs member is never revived empty under
//     its old ID by this path. Every pod-loss trigger calls
//     replaceLostMemoryMember with its own podLoss (a reason, and how a live
//     read of the Pod confirms it).
//
// A planned fourth goes through the same flow: a roll (roll.go). When the
// cluster reconciler changed spec.version and the running Pod's etcd image
// tag differs, or re-templated the member (resources, affinity,
// topologySpreadConstraints, options) and the Pod's template hash
// (annotation etcd.etcdfleet.io/template-hash, recorded in
// status.templateHash; a Pod from before hashes is taken as running its
// member's spec when first seen) is not that of the spec, the Pod is
// restarted on the spec, only while the other voters keep quorum without
// it, and the gate is asked with gate.VersionRoll or gate.TemplateRoll,
// which a shared gate serves after every heal. A
// PVC member's Pod is deleted and recreated on its claim with its ID
// (counted in its status, never capped); a memory member is removed like
// a lost one (holding the lease) and replaced by a new member.
//
// The flow, the same for every kind: paused? → counted already? → policy
// (cap, backoff) → one removal per etcd cluster → safety check → shared gate
// (the wait counts in etcdfleet_member_replacements_throttled_total) →
// record → UID-guarded delete → metric and Event. Every wait is a requeue
// with its reason in the Ready condition; no worker blocks.
//
// # Memory-backed members
//
// Invariant: a member never runs under its old member ID on a wiped data
// dir. Two paths keep it:
//
//   - the Pod is gone or replaced (graceful shutdown, eviction): the Pod
//     UID recorded before no longer matches, so the EtcdMember is deleted
//     and the cluster reconciler adds a new member with a new ID;
//   - the same Pod restarts after a hard power loss on an empty tmpfs: its
//     data-dir guard init container (package datadirguard) refuses to start
//     etcd and reports DataDirLost, which is one more pod-loss trigger
//     (dataDirWiped) through the same flow: the member is deleted while
//     quorum holds without it; when no member answers it waits, and the
//     guard keeps etcd down, so nothing is revived.
//
// The guard, not restartPolicy Never, is the defence: kubelets have
// restarted Never Pods after a reboot.
//
// When every member lost its data (total loss), this reconciler removes
// nothing; with spec.recovery.restoreOnTotalLoss the cluster reconciler
// decides a restore and deletes the lost members itself. Their finalizers
// then skip MemberRemove, as for a cluster being deleted: the members
// listed in the EtcdCluster's status.recovery (phase Restoring) belong to
// an etcd cluster that no longer exists.
//
// How each guarantee is kept:
//
//   - Counted once. The record (replacement.lastPodUID = the Pod being
//     replaced) is written before the delete, in one status update with the
//     resourceVersion read. If it fails, nothing was deleted and the next
//     reconcile starts over (the token is given back). If the delete fails
//     after it, or the manager restarts in between, the next reconcile finds
//     lastPodUID equal to the Pod being replaced and only retries the
//     delete: no Decide, no second token, no second count, one Event.
//   - No removal on a guess. A pod-loss removal first reads the Pod from the
//     apiserver (Cluster.Reader): the cache is filtered on a label a user can
//     change, so a Pod missing from it may still run. It then reads live
//     membership (MemberList through the other members) and health (each
//     voter's own Status answer) and removes the member only if the other
//     voters are a majority (etcd.HasQuorum), or if quorum is already lost
//     and the cluster recovers from a survivor by itself (quorumLoss
//     FromSurvivor: removing a member that cannot come back then costs
//     nothing); it waits when it would cost quorum, when no member answers
//     at all, which may be our network rather than etcd, and when quorum is
//     lost under quorumLoss Manual, where a person decides and nothing is
//     touched until then (lostQuorumSafety). The gate is told the real
//     quorum state. A crash-looping member is replaced only while the other
//     voters hold quorum by the same live reading, counting only voters
//     that do not crash-loop themselves (one can answer between crashes).
//   - One removal per etcd cluster. Crash-loop and pod-loss replacements
//     take a lease, EtcdCluster status.replacing, in the same status update
//     as their record, with the resourceVersion read: of two workers (in one
//     manager or in two) one gets a conflict and, on its retry, sees the
//     lease held and waits. The cluster reconciler releases the lease when
//     the member is gone from the API (its finalizer removed it from etcd,
//     so the next quorum check counts without it) or is back and Ready. The
//     member is marked not Ready before the lease is taken, so a stale Ready
//     does not release it. Terminal-Pod replacement takes no lease: after a
//     whole-cluster reboot every member is terminal and all must come back.
//   - Capped and backed off. Terminal-Pod replacements are counted in the
//     member's status.replacement. Crash-loop and pod-loss replacements make
//     a new member each time, whose own status starts empty, so they are
//     counted in the EtcdCluster's status.replacement instead; at the cap
//     the EtcdCluster gets ReplacementsExhausted=True and one Warning Event,
//     and the cluster reconciler lifts the cap once every member was Ready
//     for the policy's healthy period. The replace-now annotation on the
//     member bypasses either cap once per value.
//
// # Trade-offs
//
// Terminal-Pod replacement is not quorum-gated: deleting a terminal Pod
// loses nothing (its PVC stays), so the gate only paces. It tells the gate
// whether this member is one that gives the etcd cluster back its quorum,
// from the cache (quorumLostCached): a voter is up only if it is Ready and
// its Pod runs and is ready, and the voters already on their way back
// (granted, or a new Pod starting) count as up. The
// Pods make the answer as quick as the Pod watch; the members' Ready
// conditions alone lag, since each is written by its own reconcile.
//
// The lease is released when the removal took effect, not when a successor
// is Ready: the cluster reconciler adds a successor only once every member
// is Ready, so waiting for it would leave a second crash-looping member
// unreplaced forever. Two members can therefore be out at once, but only
// when the live quorum check made after the first removal allows it.
//
// The cluster-wide count means a crash loop of one member and a pod loss
// of another share one cap and one backoff. That is deliberate: both cost a
// membership change of the same etcd cluster.
package etcdmember
