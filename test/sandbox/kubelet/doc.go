// Package kubelet is the sandbox's simulated kubelet: it registers Nodes,
// binds unscheduled Pods (there is no scheduler), and runs every container
// whose image is an etcd image as a real etcd process on its own loopback
// IP, and every container whose image is etcdfleet's own as the repo's
// etcdfleet-agent, reporting Pod status the way the kubelet does.
//
// # Setup
//
// One Kubelet serves every Node of one sandbox cluster. It is given the
// cluster's clientset, the etcd binary built by test/tools/assets.sh, the
// etcdfleet-agent binary (the sandbox builds it once per process), a
// sandboxdns.Hosts file for Kubernetes DNS names, and a shared IPAllocator.
// Start registers the Nodes and begins watching Pods and PVCs.
//
// # Usage
//
// Tests create Pods as an operator would and observe real etcd behind them.
// Faults are a Go API: RebootNode/RebootAll (graceful node shutdown, leaving
// Pods terminal exactly as the kubelet does and never restarting them),
// PowerLoss/PowerLossAll (hard power loss: SIGKILL, nothing written, the
// Node's Lease no longer renewed; on boot the same Pods restart in new
// sandboxes, and those evicted meanwhile are finished), FailAdmission,
// Crash, SetNodeReady, and AddNode.
//
// # Implementation details
//
//   - One podWorker goroutine per running Pod owns that Pod's processes,
//     volumes, IP and status writes: no other goroutine touches them.
//   - Volumes: a PVC is a host directory that lives as long as the claim
//     (deleted when the claim is); an emptyDir (any medium) is removed when
//     the Pod stops; a power loss empties medium: Memory emptyDirs and keeps
//     disk ones; Secrets and ConfigMaps are written as files.
//   - Init containers run in order, each to completion, before the
//     containers, on every new sandbox (a Pod's first start and each boot
//     after a power loss) and not on a container restart. A failing one is
//     retried with backoff (restartPolicy Never fails the Pod); the Pod is
//     Pending with Initialized=False meanwhile. Termination messages come
//     from the file at terminationMessagePath (mounted per container run),
//     or the log tail under FallbackToLogsOnError.
//   - A worker started for a Pod whose status says it ran here (a boot
//     after a power loss) continues its counts: restartCount+1 and
//     lastState terminated with reason Unknown, exit code 255.
//   - Arguments of etcd containers are rewritten: listen URLs bind the Pod
//     IP (every member uses the same ports), and container paths under a
//     volume mount point at the host directory backing it.
//   - Heartbeats (heartbeat.go): every live Node's Lease in
//     kube-node-lease is renewed each Options.LeaseRenewInterval, and a
//     Node Ready condition or Pod readiness that the node lifecycle
//     controller marked down while the kubelet lived is written back, as
//     the real kubelet's node status loop and status manager do.
//   - NoExecute tolerationSeconds are capped by Options.MaxTolerationSeconds
//     when the kubelet schedules a Pod, so that the real taint eviction
//     controller evicts in test time.
//   - Each Node is its own zone (topology.kubernetes.io/zone): see
//     registerNode for what that makes the node lifecycle controller do.
//   - Readiness probes run at the Pod's own period, capped by
//     Options.MaxProbePeriod so tests do not wait real-world seconds.
//     Liveness probes keep the Pod's own timings: compressed, they killed
//     etcd that a loaded machine started more slowly than that.
//
// # Trade-offs
//
// Other containers are reported Running without any process (init
// containers: Completed at once). There is
// no cgroup, resource accounting, image pull or network isolation: every
// Pod shares the host network namespace on its own loopback address.
package kubelet
