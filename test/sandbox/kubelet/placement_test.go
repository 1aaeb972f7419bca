package kubelet

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestHostnameAllowed: a required node affinity on kubernetes.io/hostname
// (In) limits a Pod to the Nodes it names; without one, or with rules the
// sandbox does not read, every Node is allowed.
func TestHostnameAllowed(t *testing.T) {
	on := func(key string, op corev1.NodeSelectorOperator, values ...string) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}}}}}}}
	}
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		node string
		want bool
	}{
		{"no affinity", &corev1.Pod{}, "n0", true},
		{"named", on(corev1.LabelHostname, corev1.NodeSelectorOpIn, "n1", "n2"), "n2", true},
		{"not named", on(corev1.LabelHostname, corev1.NodeSelectorOpIn, "n1", "n2"), "n0", false},
		{"other key", on("zone", corev1.NodeSelectorOpIn, "a"), "n0", true},
		{"other operator", on(corev1.LabelHostname, corev1.NodeSelectorOpNotIn, "n0"), "n0", true},
	} {
		if got := hostnameAllowed(c.pod, c.node); got != c.want {
			t.Errorf("%s: hostnameAllowed(%s) = %v, want %v", c.name, c.node, got, c.want)
		}
	}
}
