package charts_test

import (
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/etcdfleet/etcdfleet/config"
	"github.com/etcdfleet/etcdfleet/fleet/ctl"
)

// sameAdmissionPolicy: the chart's documented install renders the admission
// policy of config/rbac/workload (the one etcdfleetctl register applies),
// field for field.
func sameAdmissionPolicy(t *testing.T, cfgObjs, chartObjs []*unstructured.Unstructured) {
	t.Helper()
	for _, k := range config.AdmissionObjects() {
		want, got := find(t, cfgObjs, k.Kind, k.Name), find(t, chartObjs, k.Kind, k.Name)
		if !equalJSON(t, got.Object["spec"], want.Object["spec"]) {
			t.Errorf("the chart's %s %s differs from config/rbac/workload/admission_policy.yaml", k.Kind, k.Name)
		}
	}
	off := mustTemplate(t, workloadChart, workloadRelease, systemNS, "--set", "admissionPolicy.enabled=false", "--set", "watchNamespaces={etcd}")
	for _, o := range off {
		if strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") {
			t.Errorf("admissionPolicy.enabled=false still renders %s %s", o.GetKind(), o.GetName())
		}
	}
}

// TestWorkloadChartNamespacedMode: with watchNamespaces the ClusterRole is
// bound by a RoleBinding in each namespace and by no ClusterRoleBinding, as
// etcdfleetctl register --namespaces binds it; only the identity
// role keeps its ClusterRoleBinding.
func TestWorkloadChartNamespacedMode(t *testing.T) {
	objs := mustTemplate(t, workloadChart, workloadRelease, systemNS, "--set", "watchNamespaces={team-a,team-b}")
	var bound []string
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRoleBinding":
			if o.GetName() != ctl.WorkloadIdentityRole {
				t.Errorf("namespaced mode renders ClusterRoleBinding %s", o.GetName())
			}
		case "RoleBinding":
			rb := convert[rbacv1.RoleBinding](t, o)
			want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: saName, Namespace: systemNS}}
			if rb.RoleRef.Kind != "ClusterRole" || rb.RoleRef.Name != ctl.WorkloadClusterRole || !slices.Equal(rb.Subjects, want) {
				t.Errorf("RoleBinding %s/%s binds %+v to %+v", rb.Namespace, rb.Name, rb.RoleRef, rb.Subjects)
			}
			if rb.Name != ctl.WorkloadClusterRole {
				t.Errorf("RoleBinding %s/%s: etcdfleetctl names it %s", rb.Namespace, rb.Name, ctl.WorkloadClusterRole)
			}
			bound = append(bound, rb.Namespace)
		}
	}
	if !slices.Equal(bound, []string{"team-a", "team-b"}) {
		t.Errorf("RoleBindings in %v, want team-a and team-b", bound)
	}
	find(t, objs, "ClusterRole", ctl.WorkloadClusterRole)
	find(t, objs, "ClusterRoleBinding", ctl.WorkloadIdentityRole)
}
