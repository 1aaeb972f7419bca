// Package ctl implements etcdfleetctl: registering a workload cluster with
// the fleet, unregistering it, and showing the dashboard.
//
// # Register
//
// On the workload cluster, with the caller's own credentials: apply the
// EtcdCluster/EtcdMember CRDs and the manager's least-privilege RBAC (a
// ServiceAccount, a ClusterRole and its binding, from config/rbac/workload),
// then mint a token for that ServiceAccount with the TokenRequest API.
// On the management cluster: write the labelled kubeconfig Secret holding
// only the workload server, its CA and that token — never the credentials
// used to run the command. Running it again rotates the token.
//
// # Trade-offs
//
// Tokens from the TokenRequest API expire (default one year, see
// --token-duration); re-run register before then, or sooner to rotate.
package ctl
