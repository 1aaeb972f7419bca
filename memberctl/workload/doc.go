// Package workload describes one workload cluster to the memberctl
// reconcilers: its clients, event recorder, etcd access and replacement
// gate. memberctl knows nothing of fleets; the fleet layer hands a Cluster
// per engaged cluster through a Source, and a single-cluster operator hands
// the same Cluster every time (Static).
//
// Kinds is the one table of the kinds the reconcilers use in a workload
// cluster (watches, caching, REST scope); memberctl/operator derives every
// other view of them from it, and registers every reconciler with its
// watches (operator.Setup).
//
// Permissions is the one table of what the manager may do there, each
// RBAC rule with its reason and the admission policy that narrows its
// writes. `make manifests` generates config/rbac/workload/cluster_role.yaml
// and the workload chart's rules from it (ClusterRoleYAML,
// ChartRulesTemplate, written by config/rbac/gen), and memberctl/operator
// derives the pre-flight access checks from it (AccessChecks): every verb
// of every row but the Events' writes. A test checks that every watched
// kind can be listed and watched under it.
package workload
