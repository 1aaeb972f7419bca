// Package ctl implements etcdfleetctl: registering a workload cluster with
// the fleet, unregistering it, and showing the dashboard.
//
// # Register
//
// On the workload cluster, with the caller's own credentials: apply the
// EtcdCluster/EtcdMember CRDs, the manager's least-privilege RBAC (a
// ServiceAccount and a ClusterRole from config/rbac/workload, bound by
// RoleBindings in --namespaces only, or, with an explicit and warned
// --cluster-wide, by a ClusterRoleBinding; a
// ClusterRole reading only the kube-system Namespace, the cluster's
// identity, bound cluster-wide in both modes) and the
// admission policy that admits only etcdfleet-shaped Pods from that
// ServiceAccount; then create a registration Secret labelled
// RegistrationOfLabel=NAME and mint a token of the ServiceAccount bound to
// it (TokenRequest boundObjectRef). On the management cluster: write the
// labelled kubeconfig Secret holding only the workload server, its CA (read
// from a certificate-authority file if need be) and that token, annotated
// with the granted expiry and the watched namespaces — never the
// credentials used to run the command. Finally delete the earlier
// registration Secrets of NAME, which revokes their tokens.
//
// # Unregister
//
// Delete the management Secret; with the workload cluster's config, delete
// NAME's registration Secrets (revoking the token and every token rotated
// from it), then the orphans the token may have created (RemoveOrphans,
// OrphanDefinition: labelled managed-by=etcdfleet, controlled by no live
// etcdfleet object; claims only with DeleteOrphanedClaims), and, on
// request, the ServiceAccount, bindings and admission policies.
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
// Tokens expire (DefaultTokenDuration, 30 days): run register again before
// then, which is also how to rotate, or opt in to unattended rotation
// (AllowTokenRotation, fleet/rotation), which grants the ServiceAccount
// tokens of itself bound to a registration Secret, and waits until the
// apiserver enforces the policy that holds it to that. The new token is stored before the old
// is revoked, so the manager never holds a revoked token while a valid one
// exists; if the revocation fails, register says so and a re-run finishes
// it. A cluster is in one mode only: the ServiceAccount is shared by every
// registration of that workload cluster, so registering it again in the
// other mode switches all of them.
package ctl
