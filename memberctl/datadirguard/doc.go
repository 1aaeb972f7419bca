// Package datadirguard keeps the invariant of memory-backed members: a
// member never runs under its old etcd member ID on a wiped data directory.
//
// A memory member keeps its data on a tmpfs (emptyDir, medium Memory). A
// graceful node shutdown leaves its Pod terminal and the member reconciler
// replaces the member. A hard power loss does not: the kubelet boots and
// restarts the same Pod (same UID) in a new sandbox, on an empty tmpfs,
// with --initial-cluster-state=existing, and etcd would rejoin under its
// old ID having forgotten the votes and entries it acknowledged. etcd's
// maintainers call a lost data dir a lost member (etcd-io/etcd#5857): it
// must be removed and added back as a new member. restartPolicy Never is no
// defence: kubelets have restarted Never Pods after a reboot.
//
// # Setup
//
// The Pod builder calls ForMember for every member; it returns, for memory
// members only, a "datadir-guard" init container and a small disk emptyDir
// holding a marker. The guard is etcdfleet-agent (cmd/etcdfleet-agent),
// because etcd's images are distroless and have no shell. The Dockerfile
// builds it into the etcdfleet image next to the manager, at AgentPath, so
// the image defaults to DefaultImage (the manager's image at the chart's
// appVersion). A user who mirrors images sets Options.Image, fed from
// pod.BuildOptions.AgentImage. Nodes must be able to pull that image.
//
// # Usage
//
// The member reconciler calls DataDirLost on the member's Pod; true means
// the guard refused to start etcd, and the member is handled as lost: it is
// removed and a new member with a new ID replaces it, while quorum holds
// without it. With quorum lost nothing is removed and nothing revives: the
// guard keeps etcd from starting, and the cluster reports QuorumLost.
//
// # Implementation details
//
// Init containers run on every new Pod sandbox (first start, and again
// after a reboot or power loss), and not when only a container restarts.
// So the guard sees exactly the starts where the tmpfs may be new:
//
//   - no marker: first start of this Pod; write the marker, exit 0;
//   - marker, and etcd data (member/) in the data dir: the tmpfs survived
//     a sandbox recreation; exit 0;
//   - marker, no etcd data: the tmpfs was wiped under a Pod that ran
//     before; write a termination message starting "DataDirLost:" and
//     exit 1. The kubelet retries it with backoff and keeps the message in
//     the guard's state or lastState, where DataDirLost finds it.
//
// The marker lives on a disk emptyDir, which is kept across a reboot for
// as long as the Pod exists, and goes with the Pod: a new Pod (a new
// member) starts without one.
//
// # Trade-offs
//
//   - A power loss after the guard wrote its marker but before etcd
//     created member/ also reads as lost, though the member had
//     acknowledged nothing. It is replaced needlessly: safe, at the cost
//     of one membership change.
//   - An etcd crash keeps the tmpfs and restarts in place without the
//     guard; that is correct, since the data is still there.
//   - The guard needs a second image on the nodes. Running the check in
//     the etcd container would need a shell, which etcd's images lack.
package datadirguard
