package workload

import rbacv1 "k8s.io/api/rbac/v1"

// Escalation is a permission etcdfleet-manager must NOT hold in a
// workload cluster: none of its controllers needs it, and each is a known
// path from the credential to the whole cluster. A manager reports
// credentials that hold one as over-privileged (they still work).
type Escalation struct {
	Group       string
	Resource    string
	Subresource string
	Verbs       []string
	// ClusterScoped escalations are asked cluster-wide; the others in
	// each namespace of a namespaced registration.
	ClusterScoped bool
	// Why it is an escalation path.
	Why string
}

// Escalations is the table of what etcdfleet-manager must not be able to
// do: what `etcdfleetctl register` and the workload chart grant holds none
// of it (memberctl/workload tests check the table against Permissions).
func Escalations() []Escalation {
	rbac := rbacv1.GroupName
	return []Escalation{
		{Group: "*", Resource: "*", Verbs: []string{"*"}, ClusterScoped: true,
			Why: "everything: cluster-admin or an equivalent binding"},
		{Group: rbac, Resource: "clusterrolebindings", Verbs: []string{"create", "update", "patch"}, ClusterScoped: true,
			Why: "binds any ClusterRole, cluster-admin included, to any subject"},
		{Group: rbac, Resource: "clusterroles", Verbs: []string{"escalate", "bind"}, ClusterScoped: true,
			Why: "grants or binds rights the credential does not hold"},
		{Resource: "users", Verbs: []string{"impersonate"}, ClusterScoped: true,
			Why: "acts as any user, cluster-admins included"},
		{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicybindings",
			Verbs: []string{"delete", "update", "patch"}, ClusterScoped: true,
			Why: "lifts the admission policies that constrain etcdfleet's own writes"},
		{Resource: "nodes", Subresource: "proxy", Verbs: []string{"get", "create"}, ClusterScoped: true,
			Why: "the kubelet API: exec in any Pod of the node"},
		{Group: rbac, Resource: "rolebindings", Verbs: []string{"create", "update", "patch"},
			Why: "binds any role of the namespace, or a ClusterRole there, to any subject"},
		{Resource: "pods", Subresource: "exec", Verbs: []string{"create", "get"},
			Why: "runs commands in any Pod of the namespace, with its identity and mounts"},
		{Resource: "serviceaccounts", Subresource: "token", Verbs: []string{"create"},
			Why: "mints tokens of any ServiceAccount of the namespace"},
		{Resource: "secrets", Verbs: []string{"list", "watch"},
			Why: "reads every Secret of the namespace, not only the EtcdClusters' by name"},
	}
}
