// Package sandbox runs a local fleet of real Kubernetes clusters for tests,
// the demo and benchmarks, with no Docker and no kind.
//
// # Setup
//
// Binaries come from test/tools/assets.sh (built from the Go module proxy,
// cached outside the repo); `make test` exports KUBEBUILDER_ASSETS.
//
//	f, err := sandbox.Start(ctx, sandbox.Options{Clusters: []string{"mgmt", "w1"}, CRDDirs: dirs})
//	defer f.Stop()
//
// Each cluster has its own kube-apiserver and etcd (envtest), a
// kube-controller-manager, and a simulated kubelet (package kubelet) with
// Options.Nodes Nodes that runs etcd containers as real etcd processes on
// loopback IPs (and etcdfleet-image containers as this checkout's
// etcdfleet-agent, built once per test process into a temporary directory), with Kubernetes DNS names (package sandboxdns) and
// port-forward through the apiserver (package portforward).
//
// The kube-controller-manager runs only these controllers (kcmControllers):
//
//   - garbage-collector, namespace, serviceaccount and
//     persistentvolumeclaim-protection: cascades, namespace cleanup,
//     default ServiceAccounts, claims that go once unused;
//   - job and ttl-after-finished: snapshot Jobs;
//   - node-lifecycle and taint-eviction: a Node whose kubelet stops
//     renewing its Lease is marked Ready=Unknown after
//     NodeMonitorGracePeriod (16 s), its Pods NotReady, it is tainted
//     unreachable, and its Pods are evicted past their tolerationSeconds
//     (which the kubelet caps at 10 s as it schedules a Pod). Each Node is
//     its own zone: with every Node of a cluster down, nothing is evicted,
//     as in a real cluster;
//   - disruption: PodDisruptionBudgets' disruptionsAllowed, which the
//     eviction API checks.
//
// There is no scheduler (the kubelet binds Pods), no Deployment,
// ReplicaSet or StatefulSet controller, no endpoints controller and no
// PodGC.
//
// # Usage
//
// Give the code under test Cluster.Config or Cluster.Kubeconfig; use
// Cluster.Clientset for assertions. Faults:
//
//   - graceful node shutdown: Cluster.Reboot, Fleet.RebootAll and the
//     kubelet's RebootNode (Pods left terminal, never restarted);
//   - hard power loss: Cluster.PowerLoss, Fleet.PowerLossAll and the
//     kubelet's PowerLoss (every process killed, nothing written, tmpfs
//     emptied; Leases stop, so an outage past the grace period and the
//     Pods' tolerationSeconds ends in real evictions that the boot
//     finishes);
//   - the kubelet's FailAdmission, Crash and SetNodeReady, and AddNode (a
//     Node joining);
//   - Cluster.Hang and Cluster.Partition make the apiserver unresponsive
//     or unreachable for the code under test (not for the kubelet, so the
//     workload keeps running);
//   - drains need no fault: evict through the policy/v1 Eviction API, and
//     the disruption controller's budgets decide.
//
// # Implementation details
//
// Clusters start concurrently. CRDs are installed at apiserver start, before
// the controller-manager, whose garbage collector would otherwise learn of
// custom owner kinds only at its 30 s discovery resync. Every child process
// dies with the test binary (package proc).
//
// # Trade-offs
//
// One simulated kubelet serves all Nodes of a cluster; Nodes share the host
// network namespace and differ only in the Pods bound to them.
package sandbox
