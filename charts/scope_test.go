package charts_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/etcdfleet/etcdfleet/fleet/ctl"
)

// TestWorkloadChartScope: the workload chart binds the manager's role only
// where the installer said, as etcdfleetctl register does. A stolen token
// acts with that role wherever it is bound, and cluster-wide the role gets
// any Secret by name and port-forwards into any Pod, so there is no
// default: without watchNamespaces or clusterWide=true, or with both, the
// render fails naming the two.
func TestWorkloadChartScope(t *testing.T) {
	for _, c := range []struct {
		what string
		args []string
		want []string
	}{
		{"no scope", nil, []string{"choose where etcdfleet-manager may act", "watchNamespaces={a,b}", "clusterWide=true",
			"any Secret by name and port-forward into any Pod"}},
		{"an explicit clusterWide=false alone", []string{"--set", "clusterWide=false"}, []string{"choose where etcdfleet-manager may act"}},
		{"both scopes", []string{"--set", "clusterWide=true", "--set", "watchNamespaces={team-a}"},
			[]string{"clusterWide=true and watchNamespaces exclude each other", "watchNamespaces={a,b}", "clusterWide=true alone"}},
	} {
		_, err := template(t, workloadChart, workloadRelease, systemNS, c.args...)
		if err == nil {
			t.Errorf("%s: the chart renders", c.what)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: the error lacks %q: %v", c.what, w, err)
			}
		}
	}

	namespaced := mustTemplate(t, workloadChart, workloadRelease, systemNS, "--set", "clusterWide=false", "--set", "watchNamespaces={team-a,team-b}")
	if got := workloadBindings(namespaced); got != "RoleBinding team-a, RoleBinding team-b" {
		t.Errorf("clusterWide=false with watchNamespaces binds %s by %s, want a RoleBinding in team-a and team-b only", ctl.WorkloadClusterRole, got)
	}
	// Only the identity read stays cluster-wide.
	find(t, namespaced, "ClusterRoleBinding", ctl.WorkloadIdentityRole)
	if n := len(kindsOf(namespaced, "ClusterRoleBinding")); n != 1 {
		t.Errorf("namespaced mode renders %d ClusterRoleBindings, want the identity's alone", n)
	}

	clusterWide := mustTemplate(t, workloadChart, workloadRelease, systemNS, "--set", "clusterWide=true")
	if got := workloadBindings(clusterWide); got != "ClusterRoleBinding" {
		t.Errorf("clusterWide=true binds %s by %s, want one ClusterRoleBinding", ctl.WorkloadClusterRole, got)
	}
}

// workloadBindings lists the bindings of the workload ClusterRole in objs,
// as "Kind namespace" (no namespace for a ClusterRoleBinding).
func workloadBindings(objs []*unstructured.Unstructured) string {
	var got []string
	for _, o := range objs {
		if (o.GetKind() != "RoleBinding" && o.GetKind() != "ClusterRoleBinding") || o.GetName() != ctl.WorkloadClusterRole {
			continue
		}
		got = append(got, strings.TrimSpace(o.GetKind()+" "+o.GetNamespace()))
	}
	return strings.Join(got, ", ")
}

func kindsOf(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}
