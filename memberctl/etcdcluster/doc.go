// Package etcdcluster is the EtcdCluster reconciler: it bootstraps an etcd
// cluster from a single seed member, grows and shrinks it one membership
// change at a time, keeps its Services and PodDisruptionBudget, and reports
// its health truthfully even when etcd does not answer.
//
// # Setup
//
// One Reconciler serves any number of workload clusters: each request names
// its cluster, and a workload.Source hands back that cluster's clients,
// recorder and etcd access. memberctl/operator.Setup wires it (For
// EtcdCluster; Owns EtcdMember, Service, PodDisruptionBudget, from
// workload.Kinds), for a fleet's engaged clusters or a single local one.
//
// # Usage
//
// Users edit EtcdCluster.spec; everything else is written by the
// reconcilers. The division of labour with the member reconciler:
//
//   - This reconciler creates EtcdMembers (generateName "<cluster>-",
//     controller ownerRef, the cluster labels, spec templated from
//     status.observed plus the cluster token and TLS Secret names), then
//     patches spec.initialCluster and the component label (create, then
//     patch: a crash in between is resumed by the next pass). It
//     merge-patches status.isVoter from etcd's MemberList (the seed is
//     stamped true at creation), patches spec.dormant for a pause, and
//     deletes the newest member to scale down.
//   - The member reconciler creates the PVC and Pod once spec.initialCluster
//     is set, reports Ready (Pod ready and member ID known), removes the
//     member from etcd in its finalizer, and may delete an EtcdMember it
//     cannot revive; this reconciler then adds a new member in its place.
//
// Status: readyMembers counts running members that are Ready; replicas
// counts every EtcdMember of the cluster; members[] lists each with its
// etcd ID, role and readiness; versions[] counts the running members by
// the etcd version each reports (its status.version, read from etcd), so
// that status says what runs rather than what spec.version asks for.
// Available, Progressing and Degraded carry the reasons in the v1alpha1
// constants. VersionDrifted is True while the members run different
// versions or one other than spec.version; UpgradeBlocked is True while
// spec.version is a change etcd refuses from what runs (memberctl/upgrade
// holds the rules), or a minor downgrade (etcd's downgrade API is not
// driven yet), and new members then keep the running version
// (versions.go). A change etcd allows is rolled into the running members
// (roll.go): on a converged, healthy, unpaused cluster with no replacement
// in flight, one member's spec.version at a time, followers first, the
// leader last after MoveLeader to a member on the new version; the next
// only once that one reports the new version from etcd and every member
// is Ready (Progressing=True Upgrading with the progress; Events
// RollingMember, LeaderMoved, Upgraded). A change of the Pod template
// (resources, affinity, topologySpreadConstraints, options; template.go)
// is rolled by the same roll: the member's spec is re-templated, and the
// next member waits until this one's status.templateHash (its Pod's) is
// that of its spec (Progressing=True Rolling, TemplateDrifted=True
// TemplateMismatch meanwhile, Event Rolled at the end; both changes at once
// are one restart per member, Upgrading). status.updatedMembers counts the
// members on the latched version and template. With spec.backup set, no
// member is rolled onto a target before an EtcdSnapshot taken for it is
// Complete (preroll.go; PreRollSnapshot, and a Warning Event
// PreRollSnapshotFailed when it fails, which holds the roll until the
// snapshot is deleted). A stuck step turns terminal at
// status.progressDeadline (DeadlineExceeded, or BootstrapFailed before the
// cluster formed); change the spec, or patch or remove the deadline, to
// retry.
//
// # Implementation details
//
// Each pass: sync the Services; list the members; latch the cluster token
// and, on first sight, the spec (status.observed) with a deadline; take one
// MemberList (the seed alone before the cluster ID is known, the voters
// after); apply the progress lock; take at most one membership step; sync
// isVoter and the PDB; rebuild the status and write it if it changed.
//
// The steps, in order: wait while any member is being deleted; bootstrap
// the seed (with spec.bootstrap.restore, only once its EtcdSnapshot is
// Complete, and carrying the resolved source in the seed's spec.restore;
// see restore.go); latch the cluster ID (and, for a restored cluster,
// record status.restoredFrom with a Restored Event) when the seed's MemberList is exactly the
// seed; complete a member created but not yet given its initial cluster
// (MemberAddAsLearner unless etcd already lists its peer URL, then
// --initial-cluster from etcd's own list, sorted, URLs verbatim); wake a
// dormant member; once every member is Ready, promote the learner there is
// or create the next member; scale down by deleting the newest running
// member, or make the last one dormant when scaling to 0.
//
// Nothing returns before the status is rebuilt except a failure to list
// the members. The MemberList doubles as a live probe: when it fails, the
// cluster is reported Available=False (ClusterUnreachable, or QuorumLost
// when too few voters are Ready), readyMembers follows the members, and
// the poll slows to 10 s. While too few voters are Ready for a quorum
// the probe waits 1 s, not the 5 s list timeout: a leaderless etcd never
// answers a linearizable MemberList, and after a power cycle every
// cluster of a fleet is leaderless at once, so the long wait held the
// workers a revived cluster's reconcile needed (leaderlessListTimeout).
// A voter counts as Ready here only if the cache does not show its Pod
// stopped or not Ready: after a reboot the members' Ready statuses lag
// their Pods, and the first reconcile, woken by the first member to go
// not Ready, otherwise waited the whole 5 s on the others' dead Pods.
// For the same reason the health look (at most every 30 s) gives a member
// that is not Ready 1 s to answer its Status call, not 3 s: the first look
// after a power cycle comes as soon as etcd answers again, while the last
// members are still down or starting (unreadyStatusTimeout).
// Conditions carry observedGeneration and stable
// messages, so a steady cluster is never written to; it is re-probed every
// 60 s. Member changes wake the reconciler through the EtcdMember watch;
// timed requeues of 5 s are used only while waiting on etcd itself (a
// learner catching up, a fresh cluster reporting itself unhealthy, a
// finalizer's MemberRemove).
//
// Member replacements: the member reconciler records crash-loop and
// pod-loss replacements in status.replacement and takes status.replacing
// (the lease) before it removes a member. Each pass releases the lease once
// that member is gone from the API or back and Ready, and lifts the
// cluster-wide backoff and cap after every member was Ready for the
// policy's HealthyReset (ReplacementsExhausted=False, CapReset).
//
// Restore after total loss (totalloss.go, recovery.go): before any step,
// when the cluster had formed and etcd did not answer, each member is
// checked by live reads for proof that its data is gone (memory: its Pod
// is gone, or its data-dir guard reports DataDirLost; PVC: its claim is
// gone, or Lost for lostClaimGrace: TotalLoss Unknown ClaimsLostPending
// meanwhile). Only when every member is proven lost is it total loss:
// TotalLoss=True, reason RestoreNotEnabled (no opt-in) or NoSnapshot (no
// Complete EtcdSnapshot of the cluster), each with one Warning Event and
// nothing else done. With spec.recovery.restoreOnTotalLoss and a
// snapshot, the snapshot to restore is checked where it is stored
// (verify.go): a Job of the snapshot (etcdsnapshot.BuildVerifyJob, run
// through etcdsnapshot.Verification, which the restore drill of
// memberctl/etcdbackup shares) reads its object or file back, which must
// have the size and sha256 the snapshot recorded, and restores it into a
// throwaway etcd (TotalLoss True VerifyingSnapshot meanwhile). The
// newest Complete snapshot is tried first; one that fails is passed over
// for the next newest, and when none verifies the cluster is left as it
// is with TotalLoss True NoVerifiedSnapshot and a Warning Event, the
// checks run again once 10 minutes old. Then the shared gate is asked
// (action TotalLossRestore), and the decision is written to
// status.recovery (phase Restoring: the verified snapshot's resolved source, the lost members, the lost cluster
// ID, the revisions and time the snapshot cannot hold) together with a new
// cluster token and an empty cluster ID, in one status update with the
// resourceVersion read. From then on the lost members are invisible to the
// other steps; they are deleted (their finalizers skip MemberRemove), and
// only once all are gone does the normal bootstrap create a seed, whose
// restore source is the one in status.recovery. Latching the new cluster
// ID marks the recovery Restored, turns TotalLoss False and records a
// RestoredAfterTotalLoss Event. For opted-in clusters status.lastObserved
// keeps the newest revision seen (one Status call, at most every 30 s).
//
// Recovery from a survivor (majority.go, survivor.go, quorumloss.go):
// when etcd does not answer and a majority of the members is proven lost
// while some are not, Available=False MajorityLost names it. With
// spec.recovery.quorumLoss FromSurvivor, or the one-shot annotation
// etcd.etcdfleet.io/recover-from-survivor, chooseSurvivor picks the
// answering survivor with the highest raft index, then revision (or the
// one named), and refuses while any member that is not proven lost is
// silent, or without spec.backup.location (QuorumRecovery=False
// SurvivorRecoveryRefused, Warning Event, nothing touched). Otherwise an
// EtcdSnapshot of that member alone (spec.memberName) is taken; once it
// is Complete and holds the survivor's revision, the gate is asked
// (SurvivorRecovery) and decideRecovery writes status.recovery with
// fromSurvivor, after which the total-loss path above removes every old
// member and restores the seed from the survivor's snapshot; the
// annotation's value is recorded in status.recoverFromSurvivorHandled
// (an EtcdCluster's spec and metadata are never written), which spends it. Snapshot and restore rather than
// --force-new-cluster: see survivor.go.
//
// Events: MemberCreated, MemberAdded, MemberPromoted, ScalingUp,
// ScalingDown, MemberDormant, MemberResumed, ClusterIDLatched,
// DeadlineExceeded, BootstrapFailed, ClusterUnreachable, AddLearnerFailed,
// PromoteFailed, MemberRemovalDone, RestoreNotEnabled, NoSnapshot,
// NoVerifiedSnapshot,
// RestoringAfterTotalLoss, RestoredAfterTotalLoss, MajorityLost,
// SurvivorRecoveryRefused, RecoveringFromSurvivor, RecoveredFromSurvivor,
// UpgradeBlocked, RollingMember, LeaderMoved, Upgraded, Rolled,
// PreRollSnapshot, PreRollSnapshotFailed.
//
// # Trade-offs
//
// Reads come from the cache, but every step that creates or deletes a
// member first re-lists the members from the apiserver (Cluster.Reader):
// EtcdClusters and EtcdMembers are watched separately, so a pass woken by
// our own status write may not yet see the member created a moment before,
// and would create a second one. That costs one LIST per membership step.
//
// Availability counts Ready voters against the quorum of
// max(desired replicas, current voters), so a cluster still being grown to
// its size reports QuorumLost until a majority of the desired voters is
// Ready, and one being shrunk is judged by the members it still has.
//
// Scale-down removes the newest member, as the reference does, but only
// when the Ready voters left still form a quorum; otherwise it waits. It
// also waits while the workload cluster is paused (Cluster.Paused), as does
// making the last member dormant.
//
// An edit made while a step is in flight waits for the step (the lock). If
// the cluster is incomplete with no step in flight (a member is being
// replaced), nothing would release the lock, so an edit applies at once.
//
// Total loss needs proof for every member, so a Node that does not come
// back (its Pod neither gone nor refused by its guard) holds the restore
// back indefinitely: waiting is the price of never restoring over data
// that may still exist. A recreated empty claim is no longer proof, so a
// PVC cluster is restored only while its claims are absent or Lost.
// lastObserved is refreshed at most every 30 s, so lostRevisions may
// undercount the writes of the last half minute before the loss.
//
// There is no auth and no cert-manager integration: the API has neither.
package etcdcluster
