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
// # Usage
//
// Give the code under test Cluster.Config or Cluster.Kubeconfig; use
// Cluster.Clientset for assertions. Faults: Cluster.Reboot / Fleet.RebootAll
// and the kubelet's RebootNode (graceful shutdown), Cluster.PowerLoss /
// Fleet.PowerLossAll and the kubelet's PowerLoss (hard power loss),
// FailAdmission and Crash; Cluster.Hang and
// Cluster.Partition make the apiserver unresponsive or unreachable for the
// code under test (not for the kubelet, so the workload keeps running).
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
