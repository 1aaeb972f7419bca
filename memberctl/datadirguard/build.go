package datadirguard

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

const (
	// ContainerName is the guard's init container.
	ContainerName = "datadir-guard"
	// DefaultImage is the etcdfleet image, which carries etcdfleet-agent
	// next to the manager (see the Dockerfile). Keep its tag in step with
	// the chart's appVersion.
	DefaultImage = "ghcr.io/etcdfleet/etcdfleet-manager:0.1.0"
	// AgentPath is where the Dockerfile installs etcdfleet-agent.
	AgentPath = "/usr/local/bin/etcdfleet-agent"
	// Subcommand is the etcdfleet-agent subcommand that runs Run.
	Subcommand = "datadir-guard"

	markerVolume = "datadir-guard"
	markerDir    = "/var/lib/etcdfleet-guard"
)

// Options say how to build the guard for a member's Pod.
type Options struct {
	// Image runs etcdfleet-agent (default DefaultImage).
	Image string
	// DataVolume and DataDir are the member's data volume and where the
	// etcd container mounts it.
	DataVolume, DataDir string
}

// AgentSecurityContext is that of every etcdfleet-agent init container of
// a member's Pod: it writes only to its mounted volumes.
func AgentSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		ReadOnlyRootFilesystem:   ptr.To(true),
	}
}

// ForMember returns the init container and extra volumes a memory-backed
// member's Pod needs, and nothing for a member on a PersistentVolumeClaim
// (its data survives a power loss, so it may resume under its ID).
func ForMember(m *v1alpha1.EtcdMember, o Options) ([]corev1.Container, []corev1.Volume) {
	if m.Spec.Storage.Medium != v1alpha1.StorageMediumMemory {
		return nil, nil
	}
	image := o.Image
	if image == "" {
		image = DefaultImage
	}
	c := corev1.Container{
		Name:  ContainerName,
		Image: image,
		Command: []string{AgentPath, Subcommand,
			"--data-dir=" + o.DataDir,
			"--marker-dir=" + markerDir,
			"--termination-message-path=" + corev1.TerminationMessagePathDefault,
		},
		Env: []corev1.EnvVar{{Name: "POD_UID", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"},
		}}},
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		VolumeMounts: []corev1.VolumeMount{
			{Name: o.DataVolume, MountPath: o.DataDir, ReadOnly: true},
			{Name: markerVolume, MountPath: markerDir},
		},
		// Small, so that the Pod's effective request stays the etcd
		// container's (an init container's request counts if larger).
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("10m"),
			corev1.ResourceMemory: resource.MustParse("16Mi"),
		}},
		SecurityContext: AgentSecurityContext(),
	}
	v := corev1.Volume{Name: markerVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
		// Disk, not memory: the marker must outlive the tmpfs it vouches for.
		SizeLimit: ptr.To(resource.MustParse("1Mi")),
	}}}
	return []corev1.Container{c}, []corev1.Volume{v}
}
