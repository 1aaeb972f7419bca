package workload_test

import (
	"slices"
	"testing"

	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// Every admission policy of the permissions table has exactly one probe,
// so that a manager verifies each policy it relies on, and no probe names
// a policy the table does not.
func TestEveryPolicyHasOneProbe(t *testing.T) {
	policies := map[string]bool{}
	for _, p := range workload.Permissions() {
		if p.Policy != "" {
			policies[p.Policy] = true
		}
	}
	probed := map[string]int{}
	for _, pr := range workload.Probes("ns") {
		probed[pr.Policy]++
		if !policies[pr.Policy] {
			t.Errorf("probe of %q: no permission names that policy", pr.Policy)
		}
		if pr.Object.GetNamespace() != "ns" || pr.Object.GetName() != "" || pr.Object.GetGenerateName() == "" {
			t.Errorf("probe of %q: want a generated name in namespace ns, got %s/%s%s", pr.Policy,
				pr.Object.GetNamespace(), pr.Object.GetName(), pr.Object.GetGenerateName())
		}
	}
	for p := range policies {
		if probed[p] != 1 {
			t.Errorf("policy %q has %d probes, want 1", p, probed[p])
		}
	}
}

// No escalation is a permission the table grants: the manager would report
// its own install as over-privileged.
func TestNoEscalationIsGranted(t *testing.T) {
	for _, e := range workload.Escalations() {
		for _, p := range workload.Permissions() {
			if p.Group != e.Group || p.Resource != e.Resource || p.Subresource != e.Subresource {
				continue
			}
			for _, v := range e.Verbs {
				if slices.Contains(p.Verbs, v) {
					t.Errorf("escalation %s %s/%s is granted by the permissions table", v, e.Resource, e.Subresource)
				}
			}
		}
		if e.Why == "" {
			t.Errorf("escalation %s/%s says not why", e.Resource, e.Subresource)
		}
	}
}
