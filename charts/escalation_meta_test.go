package charts_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
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
