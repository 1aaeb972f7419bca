package charts_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// shapeEscalation turns one Pod shape etcdfleet builds into one it never
// builds. The corpus runs through the Pods policy (on a member's Pod) and
// through the Jobs policy (on a snapshot Job's Pod template): the Job
// controller, not etcdfleet's ServiceAccount, creates a Job's Pods, so the
// template is the only place they can be refused.
type shapeEscalation func(meta *metav1.ObjectMeta, spec *corev1.PodSpec)

func firstContainer(spec *corev1.PodSpec) *corev1.Container { return &spec.Containers[0] }

func withEnv(e corev1.EnvVar) shapeEscalation {
	return func(_ *metav1.ObjectMeta, s *corev1.PodSpec) {
		firstContainer(s).Env = append(firstContainer(s).Env, e)
	}
}

func withVolume(v corev1.VolumeSource) shapeEscalation {
	return func(_ *metav1.ObjectMeta, s *corev1.PodSpec) {
		s.Volumes = append(s.Volumes, corev1.Volume{Name: "escalation", VolumeSource: v})
	}
}

func withContainerSecurity(mutate func(sc *corev1.SecurityContext)) shapeEscalation {
	return func(_ *metav1.ObjectMeta, s *corev1.PodSpec) { mutate(firstContainer(s).SecurityContext) }
}

func withPodSecurity(mutate func(sc *corev1.PodSecurityContext)) shapeEscalation {
	return func(_ *metav1.ObjectMeta, s *corev1.PodSpec) { mutate(s.SecurityContext) }
}

// shapeEscalations is the corpus: each entry is one step from the builders'
// output, and each is a way from "run etcd" to "own the node or read a
// Secret" (issue items 1, 6 and 9 among them).
func shapeEscalations() map[string]shapeEscalation {
	secretRef := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cloud-credentials"}, Key: "key"}
	return map[string]shapeEscalation{
		"a privileged container": withContainerSecurity(func(sc *corev1.SecurityContext) {
			sc.Privileged, sc.AllowPrivilegeEscalation = ptr.To(true), nil // escalation false is invalid with privileged
		}),
		"an added capability": withContainerSecurity(func(sc *corev1.SecurityContext) {
			sc.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
		}),
		"capabilities kept":              withContainerSecurity(func(sc *corev1.SecurityContext) { sc.Capabilities.Drop = nil }),
		"privilege escalation not off":   withContainerSecurity(func(sc *corev1.SecurityContext) { sc.AllowPrivilegeEscalation = nil }),
		"a container as uid 0":           withContainerSecurity(func(sc *corev1.SecurityContext) { sc.RunAsUser = ptr.To[int64](0) }),
		"a container allowed to be root": withContainerSecurity(func(sc *corev1.SecurityContext) { sc.RunAsNonRoot = ptr.To(false) }),
		"a container without seccomp": withContainerSecurity(func(sc *corev1.SecurityContext) {
			sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		}),
		"a container without AppArmor": withContainerSecurity(func(sc *corev1.SecurityContext) {
			sc.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
		}),
		"a container with SELinux options": withContainerSecurity(func(sc *corev1.SecurityContext) {
			sc.SELinuxOptions = &corev1.SELinuxOptions{Type: "spc_t"}
		}),
		"a Pod as uid 0":           withPodSecurity(func(sc *corev1.PodSecurityContext) { sc.RunAsUser = ptr.To[int64](0) }),
		"a Pod allowed to be root": withPodSecurity(func(sc *corev1.PodSecurityContext) { sc.RunAsNonRoot = nil }),
		"a Pod without seccomp": withPodSecurity(func(sc *corev1.PodSecurityContext) {
			sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		}),
		"a Pod without AppArmor": withPodSecurity(func(sc *corev1.PodSecurityContext) {
			sc.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
		}),
		"a Pod sysctl": withPodSecurity(func(sc *corev1.PodSecurityContext) {
			sc.Sysctls = []corev1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "0"}}
		}),
		"a host network": func(_ *metav1.ObjectMeta, s *corev1.PodSpec) { s.HostNetwork = true },
		"a host PID":     func(_ *metav1.ObjectMeta, s *corev1.PodSpec) { s.HostPID = true },
		"a hostPath":     withVolume(corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}),
		"a projected Secret": withVolume(corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cloud-credentials"}}}}}}),
		"a host port": func(_ *metav1.ObjectMeta, s *corev1.PodSpec) {
			firstContainer(s).Ports = append(firstContainer(s).Ports, corev1.ContainerPort{ContainerPort: 2222, HostPort: 22})
		},
		"a foreign image": func(_ *metav1.ObjectMeta, s *corev1.PodSpec) { firstContainer(s).Image = "docker.io/library/busybox:1" },
		// etcd's own repositories at a tag etcdfleet does not list: old ones
		// ship /bin/sh (v3.3.0), and a moving tag can become anything.
		"an old etcd image": func(_ *metav1.ObjectMeta, s *corev1.PodSpec) { firstContainer(s).Image = "quay.io/coreos/etcd:v3.3.0" },
		"an old image of etcd's other repository": func(_ *metav1.ObjectMeta, s *corev1.PodSpec) {
			firstContainer(s).Image = "gcr.io/etcd-development/etcd:v3.4.13"
		},
		"an etcd patch release not listed": func(_ *metav1.ObjectMeta, s *corev1.PodSpec) { firstContainer(s).Image = "quay.io/coreos/etcd:v3.6.4" },
		"etcd by a moving tag":             func(_ *metav1.ObjectMeta, s *corev1.PodSpec) { firstContainer(s).Image = "quay.io/coreos/etcd:latest" },
		"a look-alike image": func(_ *metav1.ObjectMeta, s *corev1.PodSpec) {
			c := firstContainer(s)
			c.Image = strings.Replace(c.Image, "/etcd", "/etcd-evil", 1)
			c.Image = strings.Replace(c.Image, "etcdfleet-manager", "etcdfleet-manager-evil", 1)
		},
		"a shell": func(_ *metav1.ObjectMeta, s *corev1.PodSpec) {
			firstContainer(s).Command = []string{"/bin/sh", "-c", "id"}
		},
		"the image's entrypoint": func(_ *metav1.ObjectMeta, s *corev1.PodSpec) { firstContainer(s).Command = nil },
		"an unknown agent subcommand": func(_ *metav1.ObjectMeta, s *corev1.PodSpec) {
			firstContainer(s).Command = []string{"/usr/local/bin/etcdfleet-agent", "shell"}
		},
		"a postStart hook": func(_ *metav1.ObjectMeta, s *corev1.PodSpec) {
			firstContainer(s).Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{
				Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "id"}}}}
		},
		"an exec probe": func(_ *metav1.ObjectMeta, s *corev1.PodSpec) {
			firstContainer(s).StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "id"}}}}
		},
		"a Secret in env":    withEnv(corev1.EnvVar{Name: "KEY", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: secretRef}}),
		"a ConfigMap in env": withEnv(corev1.EnvVar{Name: "KEY", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, Key: "k"}}}),
		"a PATH of its own":  withEnv(corev1.EnvVar{Name: "PATH", Value: "/data"}),
		"a Secret as envFrom": func(_ *metav1.ObjectMeta, s *corev1.PodSpec) {
			firstContainer(s).EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cloud-credentials"}}}}
		},
		"a chosen node": func(_ *metav1.ObjectMeta, s *corev1.PodSpec) { s.NodeName = "node-0" },
		"a toleration of every taint": func(_ *metav1.ObjectMeta, s *corev1.PodSpec) {
			s.Tolerations = append(s.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists})
		},
		"a token automount":      func(_ *metav1.ObjectMeta, s *corev1.PodSpec) { s.AutomountServiceAccountToken = nil },
		"another ServiceAccount": func(_ *metav1.ObjectMeta, s *corev1.PodSpec) { s.ServiceAccountName = "powerful" },
	}
}

// shapeRefused runs the corpus through create, built by build from a
// mutated copy of the builders' shape, and wants each refused by policy.
func shapeRefused(t *testing.T, what, policy string, create func(e shapeEscalation) error) {
	t.Helper()
	for name, e := range shapeEscalations() {
		refused(t, what+" with "+name, policy, create(e))
	}
}

// dryRun is a server-side dry run: admission runs, nothing is stored.
var dryRun = metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

// foreignObjects are what other apps own in the workload cluster, created
// as an administrator: the targets of items 2, 7 and 10.
func foreignObjects(ctx context.Context, t *testing.T, wc client.Client, ns string) {
	t.Helper()
	for _, where := range []string{"kube-system", ns} {
		if where == "kube-system" {
			mustCreate(ctx, t, wc, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: where, Name: "kube-dns"},
				Spec: corev1.ServiceSpec{Selector: map[string]string{"k8s-app": "kube-dns"},
					Ports: []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}}})
			mustCreate(ctx, t, wc, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: where, Name: "coredns-0",
				Labels: map[string]string{"k8s-app": "kube-dns"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "coredns", Image: "registry.k8s.io/coredns/coredns:v1.12.0"}}}})
		}
	}
	mustCreate(ctx, t, wc, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data-web-0"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}})
}

// foreignWritesRefused: items 2 and 10, as the ServiceAccount. Every write
// here is one the RBAC allows; only the policies stand in the way.
func foreignWritesRefused(ctx context.Context, t *testing.T, sa kubernetes.Interface, policyPrefix string) {
	t.Helper()
	for what, patch := range map[string]string{
		"kube-dns given a new selector": `{"spec":{"selector":{"etcd.etcdfleet.io/cluster":"adm"}}}`,
		"kube-dns given external IPs":   `{"spec":{"externalIPs":["203.0.113.7"]}}`,
		"kube-dns made a NodePort":      `{"spec":{"type":"NodePort"}}`,
	} {
		_, err := sa.CoreV1().Services("kube-system").Patch(ctx, "kube-dns", types.MergePatchType, []byte(patch),
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		refused(t, what, policyPrefix+"-services", err)
	}
	refused(t, "CoreDNS deleted", policyPrefix+"-deletes",
		sa.CoreV1().Pods("kube-system").Delete(ctx, "coredns-0", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}))
	_, err := sa.CoreV1().Pods("kube-system").Patch(ctx, "coredns-0", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"app.kubernetes.io/managed-by":"etcdfleet"}}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
	refused(t, "CoreDNS labelled as etcdfleet's, to delete it later", policyPrefix+"-pods", err)
}

// goodObject pairs an object the builders produce with its creator.
type goodObject struct {
	what   string
	create func() error
}

func admitted(t *testing.T, goods []goodObject) {
	t.Helper()
	for _, g := range goods {
		if err := g.create(); err != nil {
			t.Errorf("%s, as memberctl builds it, is refused: %v", g.what, err)
		}
	}
}

// controlledBy is the controller reference etcdfleet's reconcilers set.
func controlledBy(kind, name string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: etcdv1.GroupVersion.String(), Kind: kind, Name: name,
		UID: types.UID("uid-" + name), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
}
