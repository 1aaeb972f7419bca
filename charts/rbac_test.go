package charts_test

import (
	"bytes"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/etcdfleet/etcdfleet/fleet/app"
	"github.com/etcdfleet/etcdfleet/memberctl/operator"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
)

// perm is one verb on a resource (with subresource, "pods/portforward"),
// or on its one object named name when set (a resourceNames rule).
type perm struct{ group, resource, verb, name string }

func (p perm) String() string {
	r := p.resource
	if p.group != "" {
		r += "." + p.group
	}
	if p.name != "" {
		r += " named " + p.name
	}
	return p.verb + " " + r
}

func perms(group, resource string, verbs ...string) []perm {
	out := make([]perm, 0, len(verbs))
	for _, v := range verbs {
		out = append(out, perm{group: group, resource: resource, verb: v})
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
// namespaced, the Fleet is cluster-scoped, and the secure metrics endpoint
// reviews each scrape's token and rights (fleet/app/metricsserver.go). No
// Events: the manager records them in the registration namespace only.
var mgmtClusterPerms = join(
	perms(fleetGroup, "fleetclusters", "get", "list", "watch"),
	perms(fleetGroup, "fleets", "get", "list", "watch", "create"),
	perms(fleetGroup, "fleets/status", "update"),
	mgmtMetricsAuthPerms,
)

// mgmtMetricsAuthPerms are granted with config.metricsSecure only.
var mgmtMetricsAuthPerms = join(
	perms("authentication.k8s.io", "tokenreviews", "create"),
	perms("authorization.k8s.io", "subjectaccessreviews", "create"),
)

// workloadPerms is what the manager does in a workload cluster:
// workload.Permissions, the table config/rbac/workload/cluster_role.yaml and
// the workload chart's rules are generated from (make manifests).
var workloadPerms = func() []perm {
	var out []perm
	for _, p := range workload.Permissions() {
		out = append(out, perms(p.Group, p.RBACResource(), p.Verbs...)...)
	}
	return out
}()

// workloadRules are workload.Permissions as the generated ClusterRoles
// must hold them: rule for rule, in order.
func workloadRules() []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, p := range workload.Permissions() {
		out = append(out, rbacv1.PolicyRule{APIGroups: []string{p.Group}, Resources: []string{p.RBACResource()}, Verbs: p.Verbs})
	}
	return out
}

// identityPerms are those of the identity ClusterRole, bound cluster-wide
// in both modes: the provider reads the kube-system Namespace to identify
// the cluster (kubeconfigsecret.KubeSystemUID), and lists EtcdClusters to
// show namespaces a namespaced registration does not grant
// (workload.UnwatchedNamespaces).
var identityPerms = []perm{{resource: "namespaces", verb: "get", name: "kube-system"},
	{group: "etcd.etcdfleet.io", resource: "etcdclusters", verb: "list"}}

const identityRole = "etcdfleet-workload-identity"

// expand lists the permissions of RBAC rules (no wildcards allowed), one
// per resource name of a resourceNames rule.
func expand(t *testing.T, rules []rbacv1.PolicyRule) []perm {
	t.Helper()
	var out []perm
	for _, r := range rules {
		if len(r.NonResourceURLs) > 0 {
			t.Errorf("unexpected rule %+v", r)
		}
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					if g == "*" || res == "*" || v == "*" {
						t.Errorf("wildcard in rule %+v", r)
					}
					for _, n := range names {
						out = append(out, perm{g, res, v, n})
					}
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

// TestWorkloadRBACMatchesConfig: config/rbac/workload and the workload
// chart's documented install grant workload.Permissions, rule for rule (the
// chart through its generated _rules.tpl), and the same ServiceAccount,
// binding, identity role and admission policies.
func TestWorkloadRBACMatchesConfig(t *testing.T) {
	cfgObjs := configRBAC(t)
	role := convert[rbacv1.ClusterRole](t, find(t, cfgObjs, "ClusterRole", "etcdfleet-workload"))
	if !equalJSON(t, role.Rules, workloadRules()) {
		t.Errorf("config/rbac/workload/cluster_role.yaml does not hold workload.Permissions: run make manifests")
	}
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
	for _, o := range cfgObjs {
		if o.GetKind() == "Secret" {
			t.Errorf("config/rbac/workload applies Secret %s: no never-expiring token by default", o.GetName())
		}
	}

	// config/rbac/workload binds cluster-wide: the chart does so when asked.
	objs := mustTemplate(t, workloadChart, workloadRelease, systemNS, "--set", "clusterWide=true")
	chartRole := convert[rbacv1.ClusterRole](t, find(t, objs, "ClusterRole", "etcdfleet-workload"))
	if !equalJSON(t, chartRole.Rules, workloadRules()) {
		t.Errorf("the chart's ClusterRole does not render workload.Permissions (templates/_rules.tpl, included by rbac.yaml)")
	}
	chartBinding := convert[rbacv1.ClusterRoleBinding](t, find(t, objs, "ClusterRoleBinding", "etcdfleet-workload"))
	if chartBinding.RoleRef != binding.RoleRef || !slices.Equal(chartBinding.Subjects, binding.Subjects) {
		t.Errorf("chart binding %+v %+v differs from config/rbac/workload's", chartBinding.RoleRef, chartBinding.Subjects)
	}
	if got := find(t, objs, "ServiceAccount", saName).GetNamespace(); got != systemNS {
		t.Errorf("chart ServiceAccount in %q", got)
	}
	for _, o := range objs {
		if o.GetKind() == "Secret" {
			t.Errorf("the chart renders Secret %s by default: no never-expiring token unless asked", o.GetName())
		}
	}
	sameAdmissionPolicy(t, cfgObjs, objs)
	sameIdentityRole(t, cfgObjs, objs)
	// The provider's pre-flight asks for a subset of what is granted.
	granted := map[perm]bool{}
	for _, p := range join(workloadPerms, identityPerms) {
		granted[p] = true
	}
	for _, p := range preflightPerms() {
		if !granted[p] {
			t.Errorf("the provider's pre-flight checks %s, which the workload RBAC does not grant", p)
		}
	}
	// With the legacy token Secret, when asked for.
	objs = mustTemplate(t, workloadChart, workloadRelease, systemNS, "--set", "tokenSecret.create=true", "--set", "watchNamespaces={etcd}")
	chartToken := find(t, objs, "Secret", "etcdfleet-token")
	if chartToken.GetAnnotations()[corev1.ServiceAccountNameKey] != saName || chartToken.Object["type"] != string(corev1.SecretTypeServiceAccountToken) {
		t.Errorf("chart token Secret %v", chartToken.Object)
	}
}

// sameIdentityRole: config/rbac/workload and the chart grant identityPerms
// by a ClusterRole of their own, bound cluster-wide to the manager.
func sameIdentityRole(t *testing.T, cfgObjs, chartObjs []*unstructured.Unstructured) {
	t.Helper()
	role := convert[rbacv1.ClusterRole](t, find(t, cfgObjs, "ClusterRole", identityRole))
	samePerms(t, "config/rbac/workload identity ClusterRole", expand(t, role.Rules), identityPerms)
	chartRole := convert[rbacv1.ClusterRole](t, find(t, chartObjs, "ClusterRole", identityRole))
	if !equalJSON(t, chartRole.Rules, role.Rules) {
		t.Errorf("the chart's identity ClusterRole rules differ from config/rbac/workload/identity.yaml")
	}
	want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: saName, Namespace: systemNS}}
	for what, objs := range map[string][]*unstructured.Unstructured{"config/rbac/workload": cfgObjs, "the chart": chartObjs} {
		b := convert[rbacv1.ClusterRoleBinding](t, find(t, objs, "ClusterRoleBinding", identityRole))
		if b.RoleRef.Kind != "ClusterRole" || b.RoleRef.Name != identityRole || !slices.Equal(b.Subjects, want) {
			t.Errorf("%s: identity binding %+v %+v, want ClusterRole %s to %+v", what, b.RoleRef, b.Subjects, identityRole, want)
		}
	}
}

// preflightPerms are the provider's pre-flight checks (app.AccessChecks)
// as perms.
func preflightPerms() []perm { return permsOf(app.AccessChecks(operator.PortForward)) }

// escalationPerms are workload.Escalations as the provider asks them
// (app.ForbiddenChecks): what the manager reports as OverPrivileged.
func escalationPerms() []perm { return permsOf(app.ForbiddenChecks()) }

// permsOf lists checks verb by verb.
func permsOf(checks []kubeconfigsecret.AccessCheck) []perm {
	var out []perm
	for _, c := range checks {
		res := c.Resource
		if c.Subresource != "" {
			res += "/" + c.Subresource
		}
		for _, v := range c.Verbs {
			out = append(out, perm{c.Group, res, v, c.Name})
		}
	}
	return out
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
