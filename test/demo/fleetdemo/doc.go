// Package fleetdemo is `make demo`: a management cluster and workload
// clusters in the sandbox, each workload cluster registered by creating its
// kubeconfig Secret, EtcdClusters created and filled with keys, the fleet
// manager running, and then every node of every cluster rebooted at once.
// It prints the dashboard as `kubectl get` shows it, healing progress, the
// time to heal, replacements per cluster and throttled waits, and verifies
// every key.
package fleetdemo
