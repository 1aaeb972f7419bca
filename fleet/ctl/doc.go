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
// One cluster, one registration: register reads the workload cluster's
// identity (its kube-system Namespace UID, as the manager does) and refuses
// a cluster that another registration Secret of the namespace already
// registers, by the identity annotation register writes on its Secrets or
// by the clusterID the manager shows on their FleetClusters, naming that
// Secret. The manager refuses such a Secret too (DuplicateCluster), however
// it was written.
//
// # Trade-offs
//
// Tokens from the TokenRequest API expire (default one year, see
// --token-duration); re-run register before then, or sooner to rotate.
package ctl
