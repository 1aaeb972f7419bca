package charts_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// writeVerbs change what is stored; a policy must constrain each of them.
var writeVerbs = map[string]admissionregistrationv1.OperationType{
	"create": admissionregistrationv1.Create, "update": admissionregistrationv1.Update,
	"patch": admissionregistrationv1.Update, "delete": admissionregistrationv1.Delete,
}

// unconstrained are the rows whose writes no policy needs to hold, and why.
func unconstrained(p workload.Permission) string {
	switch {
	case p.Resource == "events":
		return "inert: an Event changes nothing but what kubectl describe shows"
	case p.Group == etcdv1.GroupVersion.Group:
		return "etcdfleet's own kinds, validated by their CRDs: the etcd maintenance the credential is for"
	case p.Subresource == "portforward":
		return "a connection, not a write: narrowed by namespaced mode (docs/operations.md, Security model)"
	}
	return ""
}

// policiesWithCorpus are the policies (by suffix) that charts'
// TestOnAPIServer tries escalations against, read off the corpus itself.
func policiesWithCorpus() map[string]bool {
	out := map[string]bool{"pods": true, "jobs": true, // shapeRefused
		"services": true, "deletes": true} // foreignWritesRefused
	k := kindsUnderTest{prefix: "x", ec: tlsCluster("ns", "adm"), member: &etcdv1.EtcdMember{ObjectMeta: metav1.ObjectMeta{Name: "adm-0"}}}
	for _, c := range k.badCreates(context.Background()) {
		out[strings.TrimPrefix(c.policy, "x-")] = true
	}
	return out
}

// TestEveryWriteIsConstrained walks every write verb the workload role
// grants (memberctl/workload.Permissions, from which the role is
// generated) and fails unless the row is inert or its own kind, or an
// admission policy with an escalation corpus matches that resource and
// operation.
func TestEveryWriteIsConstrained(t *testing.T) {
	policies := map[string]*admissionregistrationv1.ValidatingAdmissionPolicy{}
	for _, o := range configRBAC(t) {
		if o.GetKind() == "ValidatingAdmissionPolicy" {
			policies[strings.TrimPrefix(o.GetName(), "etcdfleet-workload-")] = convert[admissionregistrationv1.ValidatingAdmissionPolicy](t, o)
		}
	}
	corpus := policiesWithCorpus()
	for _, p := range workload.Permissions() {
		resource := p.Resource
		if p.Subresource != "" {
			resource += "/" + p.Subresource
		}
		for _, verb := range p.Verbs {
			op, write := writeVerbs[verb]
			if !write || unconstrained(p) != "" {
				continue
			}
			name := p.Policy
			if op == admissionregistrationv1.Delete {
				name = "deletes"
			}
			vap := policies[name]
			switch {
			case name == "":
				t.Errorf("%s %s: no admission policy constrains it (workload.Permission.Policy is empty)", verb, resource)
			case vap == nil:
				t.Errorf("%s %s: policy etcdfleet-workload-%s is not in config/rbac/workload/admission_policy.yaml", verb, resource, name)
			case !matches(vap, p.Group, resource, op):
				t.Errorf("%s %s: policy etcdfleet-workload-%s does not match %s of it", verb, resource, name, op)
			case !corpus[name]:
				t.Errorf("%s %s: policy etcdfleet-workload-%s has no escalation corpus in charts/escalation*_test.go", verb, resource, name)
			}
		}
	}
}

func matches(vap *admissionregistrationv1.ValidatingAdmissionPolicy, group, resource string, op admissionregistrationv1.OperationType) bool {
	for _, r := range vap.Spec.MatchConstraints.ResourceRules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Operations, op) {
			return true
		}
	}
	return false
}

// TestTokenRotationGrantIsConstrained: the opt-in grant of token rotation
// (register --allow-token-rotation, the workload chart's
// tokenRotation.enabled) is a write the workload role does not hold, so
// TestEveryWriteIsConstrained does not walk it. It must be a create of
// tokens of etcdfleet's own ServiceAccount only, matched by a fail-closed
// policy that checks each request (fleet/rotation's specs try the refusals
// on a real apiserver).
func TestTokenRotationGrantIsConstrained(t *testing.T) {
	const ns, sa = "etcdfleet-system", "etcdfleet"
	var rules []rbacv1.PolicyRule
	var policy *admissionregistrationv1.ValidatingAdmissionPolicy
	for _, o := range workload.TokenRotationObjects(ns, sa) {
		switch o := o.(type) {
		case *rbacv1.Role:
			rules = append(rules, o.Rules...)
		case *rbacv1.ClusterRole:
			t.Errorf("ClusterRole %s: the grant must stay in %s", o.Name, ns)
		case *admissionregistrationv1.ValidatingAdmissionPolicy:
			policy = o
		}
	}
	if len(rules) != 1 || !slices.Equal(rules[0].Resources, []string{"serviceaccounts/token"}) ||
		!slices.Equal(rules[0].Verbs, []string{"create"}) || !slices.Equal(rules[0].ResourceNames, []string{sa}) {
		t.Fatalf("the grant must be create of serviceaccounts/token of %s only, got %+v", sa, rules)
	}
	if policy == nil {
		t.Fatal("no admission policy constrains the grant")
	}
	if policy.Spec.FailurePolicy == nil || *policy.Spec.FailurePolicy != admissionregistrationv1.Fail {
		t.Error("the token policy must fail closed")
	}
	matched := false
	for _, r := range policy.Spec.MatchConstraints.ResourceRules {
		matched = matched || (slices.Contains(r.Resources, "serviceaccounts/token") && slices.Contains(r.Operations, admissionregistrationv1.Create))
	}
	if !matched || len(policy.Spec.Validations) == 0 {
		t.Errorf("the token policy must match creates of serviceaccounts/token and validate them: %+v", policy.Spec)
	}
}
