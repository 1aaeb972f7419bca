package pod

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

func TestPodMetaAndSecurity(t *testing.T) {
	p := Build(newMember(), BuildOptions{})
	if p.Name != "m1" || p.Namespace != "ns1" || len(p.OwnerReferences) != 0 {
		t.Errorf("name/namespace/ownerRefs: %s/%s %v", p.Namespace, p.Name, p.OwnerReferences)
	}
	if !maps.Equal(p.Labels, v1alpha1.MemberLabels("c1", "m1")) {
		t.Errorf("learner labels %v", p.Labels)
	}
	voter := Build(newMember(func(m *v1alpha1.EtcdMember) { m.Status.IsVoter = true }), BuildOptions{})
	if voter.Labels[v1alpha1.LabelRole] != v1alpha1.RoleVoter {
		t.Errorf("voter labels %v", voter.Labels)
	}
	s := p.Spec
	if s.Hostname != "m1" || s.Subdomain != "c1" {
		t.Errorf("hostname %q subdomain %q", s.Hostname, s.Subdomain)
	}
	if s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken ||
		s.RestartPolicy != corev1.RestartPolicyAlways ||
		s.TerminationGracePeriodSeconds == nil || *s.TerminationGracePeriodSeconds != 30 {
		t.Errorf("pod spec basics: %+v", s)
	}
	psc := s.SecurityContext
	if psc == nil || !*psc.RunAsNonRoot || *psc.RunAsUser != 65532 || *psc.RunAsGroup != 65532 ||
		*psc.FSGroup != 65532 || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v", psc)
	}
	c := etcdContainer(t, p)
	csc := c.SecurityContext
	if csc == nil || *csc.AllowPrivilegeEscalation || !*csc.ReadOnlyRootFilesystem ||
		len(csc.Capabilities.Drop) != 1 || csc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("container security context %+v", csc)
	}
	ports := map[string]int32{}
	for _, cp := range c.Ports {
		ports[cp.Name] = cp.ContainerPort
	}
	if !maps.Equal(ports, map[string]int32{"client": 2379, "peer": 2380, "metrics": 2381}) {
		t.Errorf("ports %v", ports)
	}
}

func TestAffinity(t *testing.T) {
	def := Build(newMember(), BuildOptions{}).Spec.Affinity
	if def == nil || def.PodAntiAffinity == nil || len(def.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 0 ||
		len(def.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Fatalf("want one soft anti-affinity term by default: %+v", def)
	}
	term := def.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm
	if term.TopologyKey != corev1.LabelHostname ||
		!maps.Equal(term.LabelSelector.MatchLabels, map[string]string{v1alpha1.LabelCluster: "c1"}) {
		t.Errorf("default term %+v", term)
	}

	// A node affinity alone still gets the default spreading.
	node := &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"etcd"}},
		}}},
	}}
	m := newMember(func(m *v1alpha1.EtcdMember) { m.Spec.Affinity = &corev1.Affinity{NodeAffinity: node} })
	a := Build(m, BuildOptions{}).Spec.Affinity
	if a.NodeAffinity == nil || a.PodAntiAffinity == nil {
		t.Errorf("node affinity must be kept and spreading added: %+v", a)
	}
	if m.Spec.Affinity.PodAntiAffinity != nil {
		t.Error("Build modified the member's affinity")
	}

	// An explicit pod anti-affinity, even empty, is the user's choice.
	m = newMember(func(m *v1alpha1.EtcdMember) {
		m.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}}
	})
	if a := Build(m, BuildOptions{}).Spec.Affinity; len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 0 {
		t.Errorf("explicit anti-affinity replaced: %+v", a.PodAntiAffinity)
	}

	tsc := []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.ScheduleAnyway}}
	m = newMember(func(m *v1alpha1.EtcdMember) { m.Spec.TopologySpreadConstraints = tsc })
	if got := Build(m, BuildOptions{}).Spec.TopologySpreadConstraints; len(got) != 1 || got[0].TopologyKey != "zone" {
		t.Errorf("topology spread %+v", got)
	}
}
