package workload

import "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"

// Permission is one RBAC rule of what etcdfleet-manager may do in a
// workload cluster, with the reason for it.
type Permission struct {
	Group       string
	Resource    string
	Subresource string // "" for the resource itself
	Verbs       []string
	// Why the manager needs these verbs. The generated YAML carries it as
	// the rule's comment, so that a reviewer of the RBAC reads the reason
	// beside the grant.
	Why string
	// Policy names the ValidatingAdmissionPolicy that constrains this
	// row's create, update, patch and delete, by the suffix of its name
	// after the release (config/rbac/workload: "etcdfleet-workload-" +
	// Policy). RBAC can only say "may create Pods"; the policy says which
	// Pods. "" where the writes are inert (Events, status, finalizers)
	// or are etcdfleet's own CRs, whose shape their CRD validates.
	Policy string
}

// Admission policies by the suffix of their names (Permission.Policy).
const (
	PodsPolicy     = "pods"
	ClaimsPolicy   = "claims"
	ServicesPolicy = "services"
	PDBsPolicy     = "pdbs"
	JobsPolicy     = "jobs"
)

// Permissions is the one table of what etcdfleet-manager may do in a
// workload cluster, verb for verb (see memberctl/etcdmember,
// memberctl/etcdcluster, memberctl/etcdsnapshot, memberctl/etcdbackup,
// memberctl/etcddefrag, memberctl/component/* and the event recorder).
// config/rbac/workload/cluster_role.yaml and the workload chart's rules
// are generated from it (`make manifests`), and the pre-flight access
// checks are derived from it (memberctl/operator AccessChecks). Reading
// the kube-system Namespace, the cluster's identity, is granted apart
// (config/rbac/workload/identity.yaml): it must be bound cluster-wide even
// where these rules are bound per namespace.
func Permissions() []Permission {
	etcd := v1alpha1.GroupVersion.Group
	read := []string{"get", "list", "watch"}
	with := func(verbs ...string) []string { return append(append([]string(nil), read...), verbs...) }
	return []Permission{
		{Group: etcd, Resource: "etcdclusters", Verbs: read,
			Why: "EtcdClusters are the user's: read and watched, never written but " +
				"for their status and finalizers."},
		{Group: etcd, Resource: "etcdclusters", Subresource: "status", Verbs: []string{"update"},
			Why: "The EtcdCluster reconcilers write the status of EtcdClusters."},
		{Group: etcd, Resource: "etcdclusters", Subresource: "finalizers", Verbs: []string{"update"},
			Why: "Update on finalizers lets the EtcdMembers, Services, PDBs and scheduled " +
				"EtcdDefrags an EtcdCluster owns block its deletion " +
				"(OwnerReferencesPermissionEnforcement)."},
		{Group: etcd, Resource: "etcdmembers", Verbs: with("create", "patch", "delete"),
			Why: "EtcdMembers are the operator's: created, patched (finalizer, spec), " +
				"deleted on scale-down or loss."},
		{Group: etcd, Resource: "etcdmembers", Subresource: "status", Verbs: []string{"update", "patch"},
			Why: "The EtcdMember reconciler updates its member's status; the " +
				"EtcdCluster reconciler patches status.isVoter alone."},
		{Group: etcd, Resource: "etcdmembers", Subresource: "finalizers", Verbs: []string{"update"},
			Why: "Update on finalizers lets the Pods and claims an EtcdMember owns " +
				"block its deletion (OwnerReferencesPermissionEnforcement)."},
		{Resource: "pods", Verbs: with("create", "patch", "delete"), Policy: PodsPolicy,
			Why: "Member Pods: created, role label patched, terminal ones deleted."},
		{Resource: "pods", Subresource: "portforward", Verbs: []string{"get", "create"},
			Why: "Reaching etcd through the apiserver (SPDY: create; WebSocket: get)."},
		{Resource: "persistentvolumeclaims", Verbs: with("create"), Policy: ClaimsPolicy,
			Why: "Data claims are created once; garbage collection removes them."},
		{Resource: "services", Verbs: with("create", "patch"), Policy: ServicesPolicy,
			Why: "An EtcdCluster's peer and client Services: created, the fields " +
				"etcdfleet owns repaired by patch; garbage collection removes them."},
		{Group: "policy", Resource: "poddisruptionbudgets", Verbs: with("create", "patch", "delete"), Policy: PDBsPolicy,
			Why: "An EtcdCluster's PodDisruptionBudget: created, repaired by patch, " +
				"deleted while the cluster has no voters (paused)."},
		{Resource: "events", Verbs: []string{"create", "patch"},
			Why: "The reconcilers' Events (patch counts a repeated one). Not checked " +
				"in pre-flight: losing them loses no work."},
		{Resource: "secrets", Verbs: []string{"get"},
			Why: "TLS material of the EtcdClusters, read by name only: never listed. " +
				"RBAC cannot name Secrets by who references them, so with the " +
				"ClusterRoleBinding this is every Secret of the cluster, by name; set " +
				"namespaced mode (register --namespaces, chart watchNamespaces) to " +
				"narrow it, and everything else, to RoleBindings in those namespaces. " +
				"Mounting Secrets in Pods is narrowed further by the admission policy."},
		{Group: etcd, Resource: "etcdsnapshots", Verbs: with("create", "patch", "delete"),
			Why: "EtcdSnapshots: read them and write their status; spec.backup creates " +
				"scheduled ones and deletes those retention prunes; patch adds and drops " +
				"the cleanup finalizer (deletionPolicy Delete)."},
		{Group: etcd, Resource: "etcdsnapshots", Subresource: "status", Verbs: []string{"update"},
			Why: "The EtcdSnapshot reconciler writes the status of EtcdSnapshots."},
		{Group: etcd, Resource: "etcdsnapshots", Subresource: "finalizers", Verbs: []string{"update"},
			Why: "Update on finalizers lets the Jobs an EtcdSnapshot owns block its " +
				"deletion (OwnerReferencesPermissionEnforcement)."},
		{Group: etcd, Resource: "etcddefrags", Verbs: with("create", "delete"),
			Why: "EtcdDefrags: the user's are read and get their status written; the " +
				"EtcdCluster's spec.defrag creates scheduled ones and deletes the oldest."},
		{Group: etcd, Resource: "etcddefrags", Subresource: "status", Verbs: []string{"update"},
			Why: "The EtcdDefrag reconciler writes the status of EtcdDefrags."},
		{Group: "batch", Resource: "jobs", Verbs: with("create", "delete"), Policy: JobsPolicy,
			Why: "Snapshot Jobs are created once; their TTL and garbage collection remove " +
				"them. A failed cleanup Job is deleted to be replaced by a new try, and " +
				"a verify Job (restore after total loss, restore drill) whose outcome is " +
				"stale to be run again."},
	}
}

// RBACResource is the resource as an RBAC rule names it:
// "pods/portforward" for a subresource.
func (p Permission) RBACResource() string {
	if p.Subresource == "" {
		return p.Resource
	}
	return p.Resource + "/" + p.Subresource
}

// PortForward reports whether p is the port-forward to member Pods. Its
// rule grants both verbs, one per protocol, but a manager uses the one of
// its etcd access mode only, so pre-flight asks for that one alone
// (memberctl/operator AccessChecks).
func (p Permission) PortForward() bool {
	return p.Group == "" && p.Resource == "pods" && p.Subresource == "portforward"
}

// Preflighted reports whether pre-flight checks p before a cluster is
// engaged, and the rights re-check after: every row but the Events. A
// watched kind without list or watch never syncs its informer, and
// without any write the reconcilers make a heal or a backup stops
// half-way while the cluster looks Authorized; Events only record what
// happened, so losing them loses no work.
func (p Permission) Preflighted() bool {
	return !(p.Group == "" && p.Resource == "events")
}
