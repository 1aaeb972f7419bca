package etcdsnapshot

import (
	"path"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/datadirguard"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
)

// LabelSnapshot is etcd.etcdfleet.io/snapshot=<EtcdSnapshot name>, on the
// Job and its Pod. They deliberately do not carry LabelCluster: the
// cluster's Services and PodDisruptionBudget select on it.
const LabelSnapshot = v1alpha1.GroupName + "/snapshot"

// Options tune the reconciler. Defaults live in DefaultOptions.
type Options struct {
	// Image runs etcdfleet-agent snapshot-agent (etcdfleet's own image).
	Image string
	// Resources of the agent container. It holds one upload part in
	// memory (agent.DefaultPartSize) plus the etcd and S3 clients.
	Resources corev1.ResourceRequirements
	// ActiveDeadline bounds the Job. It exceeds the agent's own timeout so
	// that the agent, not the Job controller, reports a slow snapshot.
	ActiveDeadline time.Duration
	// TTLAfterFinished is how long a finished Job and its Pod are kept for
	// `kubectl logs`; the outcome is already in the EtcdSnapshot status.
	TTLAfterFinished time.Duration
	// BackoffLimit is the number of retries of a failed Pod; each retry
	// streams a new snapshot to the same location.
	BackoffLimit int32
	// Requeue is how often a Pending snapshot whose cluster is missing or
	// has no member to dial is looked at again.
	Requeue time.Duration
	// S3Limits bound each stage of the agent's transfers with object
	// storage (connect, first byte, throughput floor), so that a stalled
	// or tarpit store fails the Job in minutes and frees its snapshot
	// slot; the manager's settings snapshotAgent.*. Its EtcdLimits do
	// the same for reaching etcd (a refused client certificate), in the
	// snapshot Job.
	S3Limits agent.S3Limits
	// CleanupBackoffLimit is the Pod retries of a cleanup Job (deletionPolicy
	// Delete); the Job controller spaces them 10 s, 20 s, 40 s... apart, which
	// rides out a store that is down for a few minutes.
	CleanupBackoffLimit int32
	// CleanupRetry is the wait before a failed cleanup Job is replaced by a
	// new one: long enough not to hammer a store that refuses, short enough
	// that storage is freed soon after it is fixed.
	CleanupRetry time.Duration
}

// DefaultOptions returns the defaults.
func DefaultOptions() Options {
	return Options{
		Image: datadirguard.DefaultImage,
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
		},
		ActiveDeadline:   agent.DefaultTimeout + 5*time.Minute,
		TTLAfterFinished: 10 * time.Minute,
		BackoffLimit:     2,
		Requeue:          30 * time.Second,
		S3Limits:         agent.DefaultS3Limits(),

		CleanupBackoffLimit: 4,
		CleanupRetry:        5 * time.Minute,
	}
}

// Mount points in the agent container.
const (
	tlsServerDir = "/etc/etcdfleet/etcd-ca"
	tlsClientDir = "/etc/etcdfleet/etcd-client"
	s3CredsDir   = "/etc/etcdfleet/s3"
	s3CADir      = "/etc/etcdfleet/s3-ca"
	pvcDir       = "/snapshot"
	containerID  = "snapshot-agent"
	// nonRootUID is the distroless nonroot user of etcdfleet's image.
	nonRootUID = 65532
)

// JobName is the snapshot Job of an EtcdSnapshot.
func JobName(snap string) string { return snap + "-snapshot" }

// ObjectKey is where the snapshot goes in its bucket: key, or key (a
// prefix ending in "/", or empty) plus "<snapshot>.db".
func ObjectKey(s *v1alpha1.EtcdSnapshot) string {
	return withName(s.Spec.Location.S3.Key, s.Name)
}

// FilePath is the snapshot's file inside its claim, by the same rule.
func FilePath(s *v1alpha1.EtcdSnapshot) string {
	return withName(s.Spec.Location.PVC.Path, s.Name)
}

func withName(keyOrPrefix, name string) string {
	if keyOrPrefix == "" || strings.HasSuffix(keyOrPrefix, "/") {
		return keyOrPrefix + name + ".db"
	}
	return keyOrPrefix
}

// URI names the stored snapshot: s3://<bucket>/<key> or pvc://<claim>/<path>.
func URI(s *v1alpha1.EtcdSnapshot) string {
	if loc := s.Spec.Location.S3; loc != nil {
		return "s3://" + loc.Bucket + "/" + ObjectKey(s)
	}
	return "pvc://" + s.Spec.Location.PVC.ClaimName + "/" + path.Clean(FilePath(s))
}

// BuildJob is the Job that takes snapshot s of the members' etcd cluster.
// members are the ones to dial (etcd.Select); the first one's TLS settings
// are the cluster's.
func BuildJob(s *v1alpha1.EtcdSnapshot, members []v1alpha1.EtcdMember, o Options) *batchv1.Job {
	cfg := agent.Config{TerminationMessagePath: corev1.TerminationMessagePathDefault, Timeout: agent.DefaultTimeout,
		SingleMember: s.Spec.MemberName != "", Etcd: o.S3Limits.EtcdLimits}
	for i := range members {
		cfg.Endpoints = append(cfg.Endpoints, etcd.MemberClientURL(&members[i]))
	}
	var v volumes
	if m := &members[0]; etcd.ClientTLS(m) {
		v.mount("etcd-ca", tlsServerDir, secretVolume(m.Spec.TLS.ClientServerSecretRef, "ca.crt"))
		cfg.CAFile = tlsServerDir + "/ca.crt"
		if m.Spec.TLS.ClientMTLS && m.Spec.TLS.OperatorClientSecretRef != "" {
			v.mount("etcd-client", tlsClientDir, secretVolume(m.Spec.TLS.OperatorClientSecretRef, "tls.crt", "tls.key"))
			cfg.CertFile, cfg.KeyFile = tlsClientDir+"/tls.crt", tlsClientDir+"/tls.key"
		}
	}
	v.storage(s, &cfg)
	return agentJob(s, JobName(s.Name), cfg, v, o.BackoffLimit, o.ActiveDeadline, o)
}

// volumes are the agent container's volumes and their mounts.
type volumes struct {
	list   []corev1.Volume
	mounts []corev1.VolumeMount
}

func (v *volumes) mount(name, dir string, src corev1.VolumeSource) {
	v.list = append(v.list, corev1.Volume{Name: name, VolumeSource: src})
	v.mounts = append(v.mounts, corev1.VolumeMount{Name: name, MountPath: dir, ReadOnly: src.PersistentVolumeClaim == nil})
}

// storage mounts where s is stored (the S3 credentials, or the claim) and
// points cfg at it.
func (v *volumes) storage(s *v1alpha1.EtcdSnapshot, cfg *agent.Config) {
	if loc := s.Spec.Location.S3; loc != nil {
		v.mount("s3-credentials", s3CredsDir, secretVolume(loc.CredentialsSecretRef.Name, agent.AccessKeyIDKey, agent.SecretAccessKeyKey))
		cfg.S3 = &agent.S3{Endpoint: strings.TrimSuffix(loc.Endpoint, "/"), Bucket: loc.Bucket, Key: ObjectKey(s),
			Region: loc.Region, CredentialsDir: s3CredsDir}
		if ref := loc.CABundleSecretRef; ref != nil {
			key := CABundleKey(ref)
			v.mount("s3-ca", s3CADir, secretVolume(ref.Name, key))
			cfg.S3.CAFile = path.Join(s3CADir, key)
		}
		if sse := loc.ServerSideEncryption; sse != nil {
			cfg.S3.SSE, cfg.S3.SSEKMSKeyID = string(sse.Type), sse.KMSKeyID
		}
		return
	}
	loc := s.Spec.Location.PVC
	v.mount("snapshot", pvcDir, corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: loc.ClaimName}})
	cfg.File = path.Join(pvcDir, FilePath(s))
}

// CABundleKey is the key of ref's Secret that holds the store's CA
// bundle: ref.Key, or v1alpha1.DefaultCABundleKey when the object was
// stored without the CRD's default.
func CABundleKey(ref *v1alpha1.SecretKeyRef) string {
	if ref.Key == "" {
		return v1alpha1.DefaultCABundleKey
	}
	return ref.Key
}

func secretVolume(name string, keys ...string) corev1.VolumeSource {
	var items []corev1.KeyToPath
	for _, k := range keys {
		items = append(items, corev1.KeyToPath{Key: k, Path: k})
	}
	return corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name, Items: items}}
}

// failOnPermanent fails an agent Job at its first Pod that exits
// agent.ExitPermanent: the next Pod would meet the same object, the same
// mismatch or the same refused credentials (agent.Permanent), and the Job
// controller's backoff would only delay the outcome by 10 s, 20 s, ...
// Other failures still count against the Job's backoffLimit. A new value
// each time: a client decodes the server's answer into the Job it sent.
func failOnPermanent() *batchv1.PodFailurePolicy {
	return &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action: batchv1.PodFailurePolicyActionFailJob,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: ptr.To(containerID),
			Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{agent.ExitPermanent}},
	}}}
}

// agentJob is a Job named name running `etcdfleet-agent snapshot-agent`
// with cfg for snapshot s.
func agentJob(s *v1alpha1.EtcdSnapshot, name string, cfg agent.Config, v volumes, backoffLimit int32, deadline time.Duration, o Options) *batchv1.Job {
	if cfg.S3 != nil {
		cfg.S3.Limits = o.S3Limits
	}
	labels := map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue, LabelSnapshot: s.Name,
		v1alpha1.LabelInstance: s.Spec.ClusterRef.Name}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.Namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To(backoffLimit),
			PodFailurePolicy:        failOnPermanent(),
			ActiveDeadlineSeconds:   ptr.To(int64(deadline.Seconds())),
			TTLSecondsAfterFinished: ptr.To(int32(o.TTLAfterFinished.Seconds())),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					// The agent talks to etcd and object storage only, never to the apiserver.
					AutomountServiceAccountToken: ptr.To(false),
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(nonRootUID)),
						RunAsGroup: ptr.To(int64(nonRootUID)), FSGroup: ptr.To(int64(nonRootUID)),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Volumes: v.list,
					Containers: []corev1.Container{{
						Name:      containerID,
						Image:     o.Image,
						Command:   []string{datadirguard.AgentPath, agent.Subcommand},
						Args:      agent.Args(cfg),
						Resources: o.Resources,
						// The agent writes its result there; on a crash the log tail says why.
						TerminationMessagePath:   corev1.TerminationMessagePathDefault,
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
						VolumeMounts:             v.mounts,
						SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
					}},
				},
			},
		},
	}
}
