package pod

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component"
	"github.com/etcdfleet/etcdfleet/memberctl/datadirguard"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

const (
	// ContainerName is the name of the etcd container.
	ContainerName = "etcd"
	// DefaultImageRepository is used when BuildOptions.ImageRepository is empty.
	DefaultImageRepository = "quay.io/coreos/etcd"
	// DataDir is where the data volume is mounted and etcd's --data-dir.
	DataDir = "/var/lib/etcd"

	dataVolume      = "data"
	clientTLSVolume = "tls-client"
	peerTLSVolume   = "tls-peer"
	clientTLSDir    = "/etc/etcd/tls/client"
	peerTLSDir      = "/etc/etcd/tls/peer"

	// nonRootID is the UID and GID etcd runs as (the distroless "nonroot" user).
	nonRootID int64 = 65532
)

// BuildOptions are the operator-wide inputs of Build.
type BuildOptions struct {
	// ImageRepository of etcd; the tag is v<spec.version>. Default
	// DefaultImageRepository.
	ImageRepository string
	// ClusterFormed is true once the parent EtcdCluster has a clusterID.
	ClusterFormed bool
	// AgentImage runs the data-dir guard of memory-backed members and the
	// restore of a restored seed
	// (default datadirguard.DefaultImage); see package datadirguard.
	AgentImage string
}

// Build returns the Pod of m. It sets no ownerRef; Sync does.
func Build(m *v1alpha1.EtcdMember, opts BuildOptions) *corev1.Pod {
	labels := v1alpha1.MemberLabels(m.Spec.ClusterName, m.Name)
	guard, guardVolumes := datadirguard.ForMember(m, datadirguard.Options{Image: opts.AgentImage, DataVolume: dataVolume, DataDir: DataDir})
	// The guard first: it must see the Pod's first start as a first start.
	restore, restoreVolumes := restoreContainer(m, opts)
	inits := append(guard, restore...)
	extraVolumes := append(guardVolumes, restoreVolumes...)
	if m.Status.IsVoter {
		labels[v1alpha1.LabelRole] = v1alpha1.RoleVoter
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, Labels: labels,
			Annotations: map[string]string{v1alpha1.AnnotationTemplateHash: TemplateHash(&m.Spec)}},
		Spec: corev1.PodSpec{
			// hostname.subdomain gives the Pod the DNS name etcd advertises,
			// through the headless Service named after the cluster.
			Hostname:                      m.Name,
			Subdomain:                     etcd.HeadlessService(m.Spec.ClusterName),
			AutomountServiceAccountToken:  ptr.To(false),
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To(nonRootID),
				RunAsGroup:     ptr.To(nonRootID),
				FSGroup:        ptr.To(nonRootID),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Affinity:                  affinity(m),
			TopologySpreadConstraints: topologySpread(m),
			Tolerations:               nodeLossTolerations(),
			InitContainers:            inits,
			Containers:                []corev1.Container{container(m, opts)},
			Volumes:                   append(volumes(m), extraVolumes...),
		},
	}
}

// NodeLossTolerationSeconds is how long a member's Pod stays bound to a
// node that is not ready or unreachable before the taint manager evicts
// it. It is Kubernetes' own default (the DefaultTolerationSeconds
// admission plugin's 300 s), made explicit so that what the replacement
// flows and docs/operations.md rely on does not depend on the apiserver's
// --default-not-ready-toleration-seconds. Shorter would evict the Pods of
// a node that merely reboots (servers take minutes), and with them
// memory-backed members whose data comes back with the node only if the
// node kept power; longer keeps the members of a dead node, which quorum
// already does without, on it for longer before they are recreated
// (PVC members: on their claims, when the node returns) or replaced
// (memory members: a new member elsewhere, while quorum holds, once
// spec.recovery.nodeLossTimeout has passed too).
//
// The clock starts when the node lifecycle controller taints the node,
// its --node-monitor-grace-period (50 s by default) after the node's last
// heartbeat, and does not start at all while every node of the cluster is
// down: the controller then blames itself and evicts nothing, and the
// Pods restart in place when their nodes boot. An eviction only marks the
// Pod deleted; a node that comes back finishes it. Tests do not wait 300 s:
// the sandbox's kubelet caps tolerationSeconds as it schedules a Pod
// (test/sandbox/kubelet, MaxTolerationSeconds), so this value is not a
// test knob, and the e2e "a long outage and a drain" runs the real
// controllers on it.
const NodeLossTolerationSeconds int64 = 300

// nodeLossTolerations are the only tolerations etcdfleet's Pods carry
// (the admission policy allows no other).
func nodeLossTolerations() []corev1.Toleration {
	var out []corev1.Toleration
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		out = append(out, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(NodeLossTolerationSeconds)})
	}
	return out
}

func container(m *v1alpha1.EtcdMember, opts BuildOptions) corev1.Container {
	repo := opts.ImageRepository
	if repo == "" {
		repo = DefaultImageRepository
	}
	return corev1.Container{
		Name:    ContainerName,
		Image:   repo + ":v" + m.Spec.Version,
		Command: append([]string{"etcd"}, Flags(m, opts.ClusterFormed)...),
		Ports: []corev1.ContainerPort{
			{Name: component.ClientPortName, ContainerPort: etcd.ClientPort, Protocol: corev1.ProtocolTCP},
			{Name: component.PeerPortName, ContainerPort: etcd.PeerPort, Protocol: corev1.ProtocolTCP},
			{Name: component.MetricsPortName, ContainerPort: etcd.MetricsPort, Protocol: corev1.ProtocolTCP},
		},
		Resources:    resources(m.Spec.Resources),
		VolumeMounts: volumeMounts(m),
		// Not quorum-aware on purpose: see the package doc.
		LivenessProbe: &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{
				TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(etcd.PeerPort)},
			},
			InitialDelaySeconds: 15,
			PeriodSeconds:       10,
			FailureThreshold:    3,
		},
		// Quorum-aware: /health fails without a leader. The metrics
		// listener is always plain HTTP, so the probe needs no certificate.
		ReadinessProbe: &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{
					Path: "/health", Port: intstr.FromInt32(etcd.MetricsPort), Scheme: corev1.URISchemeHTTP,
				},
			},
			PeriodSeconds:    5,
			FailureThreshold: 3,
		},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			// etcd writes only to its data volume.
			ReadOnlyRootFilesystem: ptr.To(true),
		},
	}
}

// Flags returns etcd's command-line flags for m (without the "etcd" argv[0]).
func Flags(m *v1alpha1.EtcdMember, clusterFormed bool) []string {
	state := "existing"
	if m.Spec.Bootstrap && m.Status.MemberID == "" && !clusterFormed {
		state = "new"
	}
	clientScheme, peerScheme := scheme(etcd.ClientTLS(m)), scheme(etcd.PeerTLS(m))
	f := []string{
		"--name=" + m.Name,
		"--data-dir=" + DataDir,
		fmt.Sprintf("--listen-peer-urls=%s://0.0.0.0:%d", peerScheme, etcd.PeerPort),
		fmt.Sprintf("--listen-client-urls=%s://0.0.0.0:%d", clientScheme, etcd.ClientPort),
		"--advertise-client-urls=" + etcd.MemberClientURL(m),
		"--initial-advertise-peer-urls=" + etcd.MemberPeerURL(m),
		"--initial-cluster=" + m.Spec.InitialCluster,
		"--initial-cluster-token=" + m.Spec.ClusterToken,
		"--initial-cluster-state=" + state,
		fmt.Sprintf("--listen-metrics-urls=http://0.0.0.0:%d", etcd.MetricsPort),
	}
	f = append(f, optionFlags(m.Spec.Options)...)
	return append(f, tlsFlags(m.Spec.TLS)...)
}

func scheme(tls bool) string {
	if tls {
		return "https"
	}
	return "http"
}

func optionFlags(o *v1alpha1.EtcdOptions) []string {
	if o == nil {
		return nil
	}
	var f []string
	if o.QuotaBackendBytes != nil {
		f = append(f, "--quota-backend-bytes="+strconv.FormatInt(*o.QuotaBackendBytes, 10))
	}
	if o.AutoCompactionMode != "" {
		f = append(f, "--auto-compaction-mode="+string(o.AutoCompactionMode))
	}
	if o.AutoCompactionRetention != "" {
		f = append(f, "--auto-compaction-retention="+o.AutoCompactionRetention)
	}
	if o.SnapshotCount != nil {
		f = append(f, "--snapshot-count="+strconv.FormatInt(*o.SnapshotCount, 10))
	}
	return f
}

// tlsFlags: the Secrets are kubernetes.io/tls with a ca.crt, mounted whole.
func tlsFlags(t *v1alpha1.MemberTLS) []string {
	var f []string
	if t == nil {
		return f
	}
	if t.ClientServerSecretRef != "" {
		f = append(f, "--cert-file="+clientTLSDir+"/tls.crt", "--key-file="+clientTLSDir+"/tls.key")
		if t.ClientMTLS {
			f = append(f, "--client-cert-auth=true", "--trusted-ca-file="+clientTLSDir+"/ca.crt")
		}
	}
	if t.PeerSecretRef != "" {
		// Peer TLS is always mutual.
		f = append(f,
			"--peer-cert-file="+peerTLSDir+"/tls.crt",
			"--peer-key-file="+peerTLSDir+"/tls.key",
			"--peer-trusted-ca-file="+peerTLSDir+"/ca.crt",
			"--peer-client-cert-auth=true")
	}
	return f
}

func resources(r corev1.ResourceRequirements) corev1.ResourceRequirements {
	if len(r.Requests) > 0 || len(r.Limits) > 0 || len(r.Claims) > 0 {
		return *r.DeepCopy()
	}
	// Requests only: a memory limit would OOM-kill etcd under load spikes,
	// which costs more than the node pressure it prevents.
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("100m"),
		corev1.ResourceMemory: resource.MustParse("128Mi"),
	}}
}

// affinity returns the spec's affinity, adding a soft anti-affinity between
// the cluster's Pods across nodes when the spec sets no pod anti-affinity,
// so that one node loss costs at most one member where the scheduler can
// manage it. An explicit (even empty) podAntiAffinity is kept as is.
func affinity(m *v1alpha1.EtcdMember) *corev1.Affinity {
	a := m.Spec.Affinity.DeepCopy()
	if a == nil {
		a = &corev1.Affinity{}
	}
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 100,
				PodAffinityTerm: corev1.PodAffinityTerm{
					LabelSelector: &metav1.LabelSelector{
						MatchLabels: map[string]string{v1alpha1.LabelCluster: m.Spec.ClusterName},
					},
					TopologyKey: corev1.LabelHostname,
				},
			}},
		}
	}
	return a
}

func topologySpread(m *v1alpha1.EtcdMember) []corev1.TopologySpreadConstraint {
	var out []corev1.TopologySpreadConstraint
	for i := range m.Spec.TopologySpreadConstraints {
		out = append(out, *m.Spec.TopologySpreadConstraints[i].DeepCopy())
	}
	return out
}

func volumes(m *v1alpha1.EtcdMember) []corev1.Volume {
	data := corev1.Volume{Name: dataVolume}
	if m.Spec.Storage.Medium == v1alpha1.StorageMediumMemory {
		data.EmptyDir = &corev1.EmptyDirVolumeSource{
			Medium:    corev1.StorageMediumMemory,
			SizeLimit: ptr.To(m.Spec.Storage.Size.DeepCopy()),
		}
	} else {
		data.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: etcd.PVCName(m.Name)}
	}
	v := []corev1.Volume{data}
	for _, s := range tlsSecrets(m.Spec.TLS) {
		v = append(v, corev1.Volume{Name: s.volume, VolumeSource: corev1.VolumeSource{
			// 0440: readable by etcd through fsGroup, by no one else.
			Secret: &corev1.SecretVolumeSource{SecretName: s.secret, DefaultMode: ptr.To[int32](0o440)},
		}})
	}
	return v
}

func volumeMounts(m *v1alpha1.EtcdMember) []corev1.VolumeMount {
	mounts := []corev1.VolumeMount{{Name: dataVolume, MountPath: DataDir}}
	for _, s := range tlsSecrets(m.Spec.TLS) {
		mounts = append(mounts, corev1.VolumeMount{Name: s.volume, MountPath: s.dir, ReadOnly: true})
	}
	return mounts
}

type tlsSecret struct{ volume, dir, secret string }

// tlsSecrets lists the Secrets the Pod mounts. The operator-client Secret
// is not among them: only the operator dials with it.
func tlsSecrets(t *v1alpha1.MemberTLS) []tlsSecret {
	var s []tlsSecret
	if t == nil {
		return s
	}
	if t.ClientServerSecretRef != "" {
		s = append(s, tlsSecret{clientTLSVolume, clientTLSDir, t.ClientServerSecretRef})
	}
	if t.PeerSecretRef != "" {
		s = append(s, tlsSecret{peerTLSVolume, peerTLSDir, t.PeerSecretRef})
	}
	return s
}
