// Package fleetdemo is `make demo`: a management cluster and workload
// clusters in the sandbox, each workload cluster registered by creating its
// kubeconfig Secret, EtcdClusters created and filled with keys, the fleet
// manager running, and then every node of every cluster rebooted at once.
// It prints the dashboard as `kubectl get` shows it, a live view of every
// EtcdCluster while it comes up and heals, the time to heal, replacements
// per cluster and throttled waits, verifies every key, and writes the heal
// as a picture, heal-timeline.svg (package test/timeline).
//
// # The live view
//
// One row per EtcdCluster, computed from its Pods as the apiserver has them
// and from etcd, never from EtcdCluster status (which lags both by a
// reconcile): a cluster is down from its first terminal Pod until every
// member's Pod is Ready again and every member answers etcd's Status under
// one leader, asked through port-forward (viewOf, etcdProbe). On a terminal the view is one table redrawn in place; in a
// pipe or a CI log it is one line per change.
//
// # The picture
//
// From just before the reboot, a watch of each workload cluster's Pods
// (bench.PodRecorder) times every member: terminal, deleted, replacement
// Ready. The manager runs in this process, and its log's grant lines
// (GrantLog, installed in the logger by the caller) add when each
// replacement asked the limiter and when it was granted.
//
// The smoke test (smoke_test.go) runs it all on 2 clusters, without the
// backup part, in `make test`.
package fleetdemo
