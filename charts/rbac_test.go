package charts_test

import (
	"bytes"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/etcdfleet/etcdfleet/fleet/app"
	"github.com/etcdfleet/etcdfleet/memberctl/operator"
)

// perm is one verb on a resource (with subresource, "pods/portforward").
type perm struct{ group, resource, verb string }

func (p perm) String() string {
	if p.group == "" {
		return p.verb + " " + p.resource
	}
	return p.verb + " " + p.resource + "." + p.group
}

func perms(group, resource string, verbs ...string) []perm {
	out := make([]perm, 0, len(verbs))
	for _, v := range verbs {
		out = append(out, perm{group, resource, v})
	}
	return out
}

func join(lists ...[]perm) []perm { return slices.Concat(lists...) }

const (
	fleetGroup = "fleet.etcdfleet.io"
	etcdGroup  = "etcd.etcdfleet.io"
)

// mgmtNamespacedPerms are granted in the registration namespace only: the
// labelled-Secret cache (providers/kubeconfigsecret CacheByObject), the
// leader-election Lease and its Events, and the FleetClusters the dashboard
// writes next to their Secrets (fleet/dashboard/sync.go).
var mgmtNamespacedPerms = join(
	perms("", "secrets", "get", "list", "watch"),
	perms("coordination.k8s.io", "leases", "get", "list", "create", "update", "delete"), // peers and fences too
	perms("", "events", "create", "patch"),
	perms(fleetGroup, "fleetclusters", "create", "update", "delete"),
	perms(fleetGroup, "fleetclusters/status", "update"),
)

// mgmtClusterPerms are granted cluster-wide: the FleetCluster cache is not
// namespaced, and the Fleet is cluster-scoped.
var mgmtClusterPerms = join(
	perms(fleetGroup, "fleetclusters", "get", "list", "watch"),
	perms(fleetGroup, "fleets", "get", "list", "watch", "create"),
	perms(fleetGroup, "fleets/status", "update"),
	perms("", "events", "create", "patch"),
)

// workloadPerms is what the manager does in a workload cluster, from the
// code: memberctl/etcdmember (finalizer patch, status update, Pod and member
// deletes), memberctl/etcdcluster (member create/patch/delete, status update and
// patch), memberctl/component/{pod,pvc,service,pdb}, memberctl/etcd (TLS Secrets
// read by name through the APIReader), the event recorder, the port-forward
// dialer, and the caches of every owned kind. Owner references that block
// deletion need update on the owners' finalizers.
var workloadPerms = join(
	perms(etcdGroup, "etcdclusters", "get", "list", "watch"),
	perms(etcdGroup, "etcdclusters/status", "update"),
	perms(etcdGroup, "etcdclusters/finalizers", "update"),
	perms(etcdGroup, "etcdmembers", "get", "list", "watch", "create", "patch", "delete"),
	perms(etcdGroup, "etcdmembers/status", "update", "patch"),
	perms(etcdGroup, "etcdmembers/finalizers", "update"),
	perms("", "pods", "get", "list", "watch", "create", "patch", "delete"),
	perms("", "pods/portforward", "get", "create"),
	perms("", "persistentvolumeclaims", "get", "list", "watch", "create"),
	perms("", "services", "get", "list", "watch", "create", "patch"),
	perms("policy", "poddisruptionbudgets", "get", "list", "watch", "create", "patch", "delete"),
	perms("", "events", "create", "patch"),
	perms("", "secrets", "get"),
)

// expand lists the permissions of RBAC rules (no wildcards allowed).
func expand(t *testing.T, rules []rbacv1.PolicyRule) []perm {
	t.Helper()
	var out []perm
	for _, r := range rules {
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			t.Errorf("unexpected rule %+v", r)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					if g == "*" || res == "*" || v == "*" {
						t.Errorf("wildcard in rule %+v", r)
					}
					out = append(out, perm{g, res, v})
				}
			}
		}
	}
	return out
}

// samePerms fails unless got and want hold the same permissions.
func samePerms(t *testing.T, what string, got, want []perm) {
	t.Helper()
	set := func(ps []perm) map[perm]bool {
		m := map[perm]bool{}
		for _, p := range ps {
			m[p] = true
		}
		return m
	}
	g, w := set(got), set(want)
	for p := range w {
		if !g[p] {
			t.Errorf("%s: missing %s", what, p)
		}
	}
	for p := range g {
		if !w[p] {
			t.Errorf("%s: grants %s, which the manager does not need", what, p)
		}
	}
}

// TestWorkloadRBACMatchesConfig: config/rbac/workload grants exactly
// workloadPerms, and the workload chart's documented install renders the
// same ServiceAccount, ClusterRole and binding.
func TestWorkloadRBACMatchesConfig(t *testing.T) {
	cfgObjs := configRBAC(t)
	role := convert[rbacv1.ClusterRole](t, find(t, cfgObjs, "ClusterRole", "etcdfleet-workload"))
	samePerms(t, "config/rbac/workload ClusterRole", expand(t, role.Rules), workloadPerms)
	sa := find(t, cfgObjs, "ServiceAccount", saName)
	if sa.GetNamespace() != systemNS {
		t.Errorf("ServiceAccount in %q, want %q", sa.GetNamespace(), systemNS)
	}
	binding := convert[rbacv1.ClusterRoleBinding](t, find(t, cfgObjs, "ClusterRoleBinding", "etcdfleet-workload"))
	wantSubjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: saName, Namespace: systemNS}}
	if binding.RoleRef.Name != role.Name || !slices.Equal(binding.Subjects, wantSubjects) {
		t.Errorf("binding %+v %+v, want ClusterRole %s to %+v", binding.RoleRef, binding.Subjects, role.Name, wantSubjects)
	}
	find(t, cfgObjs, "Namespace", systemNS)
	token := find(t, cfgObjs, "Secret", "etcdfleet-token")
	if token.GetAnnotations()[corev1.ServiceAccountNameKey] != saName {
		t.Errorf("token Secret annotations %v", token.GetAnnotations())
	}

	objs := mustTemplate(t, workloadChart, workloadRelease, systemNS)
	chartRole := convert[rbacv1.ClusterRole](t, find(t, objs, "ClusterRole", "etcdfleet-workload"))
	samePerms(t, "charts/etcdfleet-workload ClusterRole", expand(t, chartRole.Rules), workloadPerms)
	if !equalJSON(t, chartRole.Rules, role.Rules) {
		t.Errorf("the chart's ClusterRole rules differ from config/rbac/workload/cluster_role.yaml (order included)")
	}
	chartBinding := convert[rbacv1.ClusterRoleBinding](t, find(t, objs, "ClusterRoleBinding", "etcdfleet-workload"))
	if chartBinding.RoleRef != binding.RoleRef || !slices.Equal(chartBinding.Subjects, binding.Subjects) {
		t.Errorf("chart binding %+v %+v differs from config/rbac/workload's", chartBinding.RoleRef, chartBinding.Subjects)
	}
	if got := find(t, objs, "ServiceAccount", saName).GetNamespace(); got != systemNS {
		t.Errorf("chart ServiceAccount in %q", got)
	}
	chartToken := find(t, objs, "Secret", "etcdfleet-token")
	if chartToken.GetAnnotations()[corev1.ServiceAccountNameKey] != saName || chartToken.Object["type"] != string(corev1.SecretTypeServiceAccountToken) {
		t.Errorf("chart token Secret %v", chartToken.Object)
	}
	// The provider's pre-flight asks for a subset of what is granted.
	granted := map[perm]bool{}
	for _, p := range workloadPerms {
		granted[p] = true
	}
	for _, c := range app.AccessChecks(operator.PortForward) {
		for _, v := range c.Verbs {
			res := c.Resource
			if c.Subresource != "" {
				res += "/" + c.Subresource
			}
			if !granted[perm{c.Group, res, v}] {
				t.Errorf("the provider's pre-flight checks %s, which the workload RBAC does not grant", c)
			}
		}
	}
	// Without the token Secret.
	objs = mustTemplate(t, workloadChart, workloadRelease, systemNS, "--set", "tokenSecret.create=false")
	for _, o := range objs {
		if o.GetKind() == "Secret" {
			t.Errorf("tokenSecret.create=false still renders Secret %s", o.GetName())
		}
	}
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := yaml.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := yaml.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(ja, jb)
}
