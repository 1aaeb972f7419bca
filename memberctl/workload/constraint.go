package workload

import (
	"context"
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Probe is a write that the admission policy named Policy must refuse to
// etcdfleet-manager: an object etcdfleet's builders never produce, which
// nothing but that policy would refuse (it passes the restricted Pod
// Security profile and the API's own validation). A manager dry-runs
// every Probe to verify that its credentials are constrained.
type Probe struct {
	Policy string
	Kind   string
	Object client.Object
}

// probePrefix names every probe (GenerateName, so that no name of the
// namespace can collide; a dry run stores nothing).
const probePrefix = "etcdfleet-constraint-probe-"

// Probes returns one Probe per admission policy of Permissions, in
// namespace ns.
func Probes(ns string) []Probe {
	meta := metav1.ObjectMeta{Namespace: ns, GenerateName: probePrefix}
	labels := map[string]string{"app": "etcdfleet-constraint-probe"}
	pod := corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Containers: []corev1.Container{{Name: "probe", Image: "registry.k8s.io/pause:3.10",
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
	}
	return []Probe{
		{Policy: PodsPolicy, Kind: "Pod", Object: &corev1.Pod{ObjectMeta: meta, Spec: pod}},
		{Policy: JobsPolicy, Kind: "Job", Object: &batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod}}}},
		{Policy: ClaimsPolicy, Kind: "PersistentVolumeClaim", Object: &corev1.PersistentVolumeClaim{ObjectMeta: meta, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}}}},
		{Policy: ServicesPolicy, Kind: "Service", Object: &corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{
			Selector: labels, Ports: []corev1.ServicePort{{Name: "probe", Port: 80}}}}},
		{Policy: PDBsPolicy, Kind: "PodDisruptionBudget", Object: &policyv1.PodDisruptionBudget{ObjectMeta: meta, Spec: policyv1.PodDisruptionBudgetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels}}}},
	}
}

// ProbeNamespace is where Constrained dry-runs its probes for a
// cluster-wide registration: a namespace every cluster has.
const ProbeNamespace = metav1.NamespaceDefault

// Constrained dry-runs every Probe as c's credentials, in the first of
// namespaces (ProbeNamespace when none: a cluster-wide registration), and
// returns "" when every one is refused, else which were admitted. A probe
// refused as forbidden (RBAC, or a policy whose reason says so) or invalid
// (a ValidatingAdmissionPolicy's default) counts as refused; any other
// error is returned: the check could not tell.
func Constrained(ctx context.Context, c client.Client, namespaces []string) (string, error) {
	ns := ProbeNamespace
	if len(namespaces) > 0 {
		ns = namespaces[0]
	}
	var admitted []string
	for _, p := range Probes(ns) {
		err := c.Create(ctx, p.Object, client.DryRunAll)
		switch {
		case err == nil:
			admitted = append(admitted, fmt.Sprintf("a %s in namespace %s that the %q policy must refuse",
				p.Kind, ns, p.Policy))
		case apierrors.IsForbidden(err), apierrors.IsInvalid(err):
		default:
			// Not %w: an apiserver error here is about the probe (say, a
			// missing namespace), not the cluster's APIs.
			return "", fmt.Errorf("dry-run of the %q policy's probe in namespace %s: %v", p.Policy, ns, err)
		}
	}
	return strings.Join(admitted, "; "), nil
}
