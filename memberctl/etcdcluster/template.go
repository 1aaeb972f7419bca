package etcdcluster

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component/pod"
)

// Templates. What a member's Pod is built from besides its version
// (resources, affinity, topologySpreadConstraints, options) is copied from
// status.observed when the member is created; a later change of them is
// rolled into the running members like a version change (roll.go): the
// member's spec is re-templated, one member at a time, and its reconciler
// restarts the Pod, whose template hash (pod.TemplateHash, on the Pod and
// in the member's status.templateHash) then matches the spec again.

// rollTarget is the spec the running members are rolled onto.
type rollTarget struct {
	// version is the etcd version to roll to; "" keeps each member's own
	// (a change etcd refuses: UpgradeBlocked says why).
	version string
	// template is the re-templatable part of status.observed.
	template v1alpha1.EtcdMemberSpec
}

// templateOf is the re-templatable part of the latched spec, as member
// spec fields, with tlsSecrets, the hash of the TLS Secrets' contents read
// in this pass ("" when not known: each member keeps its own).
func templateOf(o *v1alpha1.EtcdClusterObservedSpec, tlsSecrets string) v1alpha1.EtcdMemberSpec {
	c := o.DeepCopy()
	t := v1alpha1.EtcdMemberSpec{Resources: c.Resources, Affinity: c.Affinity,
		TopologySpreadConstraints: c.TopologySpreadConstraints, Options: c.Options}
	if tlsSecrets != "" {
		t.TLS = &v1alpha1.MemberTLS{SecretsHash: tlsSecrets}
	}
	return t
}

// template is this pass's templateOf, or false before the spec is latched.
func (p *pass) template() (v1alpha1.EtcdMemberSpec, bool) {
	o := p.ec.Status.Observed
	if o == nil {
		return v1alpha1.EtcdMemberSpec{}, false
	}
	return templateOf(o, p.tlsSecrets), true
}

// tlsSecretsDiffer: t knows the TLS Secrets' hash and s, a member with
// TLS, was templated on other contents.
func tlsSecretsDiffer(s, t *v1alpha1.EtcdMemberSpec) bool {
	return t.TLS != nil && t.TLS.SecretsHash != "" && s.TLS != nil && s.TLS.SecretsHash != t.TLS.SecretsHash
}

// fieldTLSSecrets names a change of the TLS Secrets' contents in messages.
const fieldTLSSecrets = "TLS Secrets' contents"

// templateDiff names the re-templatable fields where s differs from t.
func templateDiff(s, t *v1alpha1.EtcdMemberSpec) []string {
	var out []string
	eq := equality.Semantic.DeepEqual
	if !eq(s.Resources, t.Resources) {
		out = append(out, "resources")
	}
	if !eq(s.Affinity, t.Affinity) {
		out = append(out, "affinity")
	}
	if !eq(s.TopologySpreadConstraints, t.TopologySpreadConstraints) {
		out = append(out, "topologySpreadConstraints")
	}
	if !eq(s.Options, t.Options) {
		out = append(out, "options")
	}
	if tlsSecretsDiffer(s, t) {
		out = append(out, fieldTLSSecrets)
	}
	return out
}

// retemplate copies t's template (and version, unless "") into s.
func (t rollTarget) retemplate(s *v1alpha1.EtcdMemberSpec) {
	c := t.template.DeepCopy()
	if t.version != "" {
		s.Version = t.version
	}
	s.Resources, s.Affinity, s.TopologySpreadConstraints, s.Options = c.Resources, c.Affinity, c.TopologySpreadConstraints, c.Options
	if tlsSecretsDiffer(s, c) {
		s.TLS.SecretsHash = c.TLS.SecretsHash
	}
}

// behind: the member's spec is still to be changed to the target.
func (t rollTarget) behind(m *v1alpha1.EtcdMember) bool {
	return (t.version != "" && m.Spec.Version != t.version) || len(templateDiff(&m.Spec, &t.template)) > 0
}

// runsSpec: the member reports, from etcd, its spec.version, and runs a Pod
// built from its spec's template.
func runsSpec(m *v1alpha1.EtcdMember) bool {
	return m.Status.Version == m.Spec.Version && m.Status.TemplateHash == pod.TemplateHash(&m.Spec)
}

// oldTemplate: the member's spec or the Pod it runs is not on template t.
// A member that has not reported its Pod's template yet is not counted.
func oldTemplate(m *v1alpha1.EtcdMember, t *v1alpha1.EtcdMemberSpec) bool {
	h := m.Status.TemplateHash
	return len(templateDiff(&m.Spec, t)) > 0 || (h != "" && h != pod.TemplateHash(&m.Spec))
}

// templateVerdict computes TemplateDrifted over the running members
// against template t.
func templateVerdict(running []*v1alpha1.EtcdMember, t v1alpha1.EtcdMemberSpec) verdict {
	var old, unknown []string
	fields := map[string]bool{}
	for _, m := range running {
		switch {
		case oldTemplate(m, &t):
			old = append(old, m.Name)
			for _, f := range templateDiff(&m.Spec, &t) {
				fields[f] = true
			}
		case m.Status.TemplateHash == "":
			unknown = append(unknown, m.Name)
		}
	}
	if len(old) > 0 {
		var fs []string
		for _, f := range []string{"resources", "affinity", "topologySpreadConstraints", "options", fieldTLSSecrets} {
			if fields[f] {
				fs = append(fs, f)
			}
		}
		what := "a Pod built from an older template than its spec's"
		if len(fs) > 0 {
			what = "an older Pod template than the spec's (" + strings.Join(fs, ", ") + ")"
		}
		return verdict{metav1.ConditionTrue, v1alpha1.ReasonTemplateMismatch,
			fmt.Sprintf("%d of %d running member(s) run %s: %s; they are rolled one at a time, followers first, the leader last",
				len(old), len(running), what, strings.Join(old, ", "))}
	}
	if len(unknown) > 0 {
		return verdict{metav1.ConditionUnknown, v1alpha1.ReasonTemplatesUnknown,
			fmt.Sprintf("member(s) %s have not reported the template of their Pod yet", strings.Join(unknown, ", "))}
	}
	return verdict{metav1.ConditionFalse, v1alpha1.ReasonTemplateMatched,
		fmt.Sprintf("every running member runs the spec's Pod template (%d)", len(running))}
}

// setTemplateStatus writes TemplateDrifted and status.updatedMembers.
func (p *pass) setTemplateStatus() {
	o := p.ec.Status.Observed
	t, ok := p.template()
	if !ok {
		return
	}
	var updated int32
	for _, m := range p.members.running {
		if m.Spec.Version == o.Version && m.Status.Version == o.Version && !oldTemplate(m, &t) && m.Status.TemplateHash != "" {
			updated++
		}
	}
	p.ec.Status.UpdatedMembers = updated
	v := templateVerdict(p.members.running, t)
	p.setCondition(v1alpha1.ConditionTemplateDrifted, v.status, v.reason, v.message)
}
