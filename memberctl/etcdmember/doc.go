// Package etcdmember is the EtcdMember reconciler: it keeps one etcd member's
// PVC and bare Pod, and replaces the Pod when the kubelet will not.
//
// # Setup
//
// One Reconciler serves any number of workload clusters: each request names
// its cluster, and a workload.Source hands back that cluster's clients,
// recorder, etcd access and replacement gate. SetupWithManager wires it for
// a single cluster; the fleet layer wires the same Reconcile through
// multicluster-runtime.
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
// Terminal Pods (phase Succeeded or Failed, owned, not being deleted) are
// what a graceful node shutdown leaves behind, and the kubelet never
// restarts them. The reconciler:
//
//  1. asks the replacement policy (backoff; cap for causes other than node
//     shutdown) and the shared gate, requeueing after their delay and never
//     blocking a worker;
//  2. writes Ready=False/PodReplacing, the observed Pod UID and the
//     replacement record in ONE status write; if it fails, the Pod stays
//     and the reconcile retries;
//  3. deletes the Pod, UID-guarded. Its deletion event brings the reconcile
//     that recreates it at once, on the same PVC, and etcd resumes with the
//     same member ID because the data directory is intact.
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
//     etcd and reports DataDirLost, which is handled as pod loss: the
//     member is deleted while quorum holds without it; without quorum it
//     says Ready=False/QuorumLost and stays, and the guard keeps etcd down.
//
// The guard, not restartPolicy Never, is the defence: kubelets have
// restarted Never Pods after a reboot.
//
// A crash-looping member is replaced only if quorum holds without it,
// computed at decision time from live membership and endpoint health.
//
// # Trade-offs
//
// Terminal-Pod replacement is not quorum-gated: after a whole-cluster
// reboot every member is terminal, and all must come back. Deleting a
// terminal Pod loses nothing (its PVC stays), so the gate only paces.
package etcdmember
