package charts_test

import (
	"reflect"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// TestWorkloadChartTokenRotation: the workload chart's opt-in renders what
// etcdfleetctl register --allow-token-rotation applies
// (workload.TokenRotationObjects, whose refusals fleet/rotation's specs try
// on a real apiserver): the same rule, bound to the chart's ServiceAccount
// only, and the same fail-closed checks on its token requests; without the
// opt-in, none of it.
func TestWorkloadChartTokenRotation(t *testing.T) {
	scope := []string{"--set", "watchNamespaces={team-a}"}
	for _, o := range mustTemplate(t, workloadChart, workloadRelease, systemNS, scope...) {
		if o.GetKind() == "Role" || o.GetName() == workloadRelease+"-tokens" {
			t.Errorf("without tokenRotation.enabled the chart renders %s %s", o.GetKind(), o.GetName())
		}
	}
	objs := mustTemplate(t, workloadChart, workloadRelease, systemNS, append(scope, "--set", "tokenRotation.enabled=true")...)
	var role *rbacv1.Role
	var policy *admissionregistrationv1.ValidatingAdmissionPolicy
	for _, o := range objs {
		switch {
		case o.GetKind() == "Role":
			role = convert[rbacv1.Role](t, o)
		case o.GetKind() == "ValidatingAdmissionPolicy" && o.GetName() == workloadRelease+"-tokens":
			policy = convert[admissionregistrationv1.ValidatingAdmissionPolicy](t, o)
		}
	}
	if role == nil || policy == nil {
		t.Fatalf("tokenRotation.enabled renders no Role or no token policy")
	}
	if want := []rbacv1.PolicyRule{workload.TokenRotationRule(saName)}; !reflect.DeepEqual(role.Rules, want) {
		t.Errorf("Role rules %+v, want %+v", role.Rules, want)
	}
	if !reflect.DeepEqual(policy.Spec.Validations, workload.TokenRequestValidations()) {
		t.Errorf("the chart's token checks differ from workload.TokenRequestValidations")
	}
	if policy.Spec.FailurePolicy == nil || *policy.Spec.FailurePolicy != admissionregistrationv1.Fail {
		t.Error("the chart's token policy must fail closed")
	}
	find(t, objs, "ValidatingAdmissionPolicyBinding", workloadRelease+"-tokens")
}
