package pod

import (
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/datadirguard"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
)

const (
	// RestoreContainerName is the init container that writes a restored
	// seed's data dir.
	RestoreContainerName = "restore"
	// restoreSubcommand is restore.Subcommand: that package links etcdutl,
	// which the manager must not.
	restoreSubcommand = "restore-agent"

	restoreCredsVolume = "restore-s3-credentials"
	restoreCredsDir    = "/etc/etcdfleet/restore-s3"
	restoreCAVolume    = "restore-s3-ca"
	restoreCADir       = "/etc/etcdfleet/restore-s3-ca"
	restoreFileVolume  = "restore-snapshot"
	restoreFileDir     = "/restore"
)

// restoring reports whether m's Pod restores a snapshot: a seed with a
// restore source, before the cluster has formed. Later Pods of the seed
// (after a replacement or a lost PVC) must not restore again under its ID.
func restoring(m *v1alpha1.EtcdMember, clusterFormed bool) bool {
	return m.Spec.Restore != nil && m.Spec.Bootstrap && m.Status.MemberID == "" && !clusterFormed
}

// restoreContainer returns the restore init container of m's Pod and the
// volumes it needs, or nothing when m does not restore (see restoring).
// It runs etcdfleet-agent restore-agent, after the data-dir guard.
func restoreContainer(m *v1alpha1.EtcdMember, opts BuildOptions) ([]corev1.Container, []corev1.Volume) {
	if !restoring(m, opts.ClusterFormed) {
		return nil, nil
	}
	image := opts.AgentImage
	if image == "" {
		image = datadirguard.DefaultImage
	}
	r := m.Spec.Restore
	args := []string{datadirguard.AgentPath, restoreSubcommand,
		"--data-dir=" + DataDir,
		"--name=" + m.Name,
		"--initial-advertise-peer-urls=" + etcd.MemberPeerURL(m),
		"--initial-cluster=" + m.Spec.InitialCluster,
		"--initial-cluster-token=" + m.Spec.ClusterToken,
	}
	if r.SHA256 != "" {
		args = append(args, "--sha256="+r.SHA256)
	}
	if r.ETag != "" {
		args = append(args, "--etag="+r.ETag)
	}
	mounts := []corev1.VolumeMount{{Name: dataVolume, MountPath: DataDir}}
	var vol corev1.Volume
	var extra []corev1.Volume
	if s3 := r.Location.S3; s3 != nil {
		// Reads need no server-side encryption setting: the store
		// decrypts SSE-S3 and SSE-KMS objects itself.
		loc := agent.S3{Endpoint: strings.TrimSuffix(s3.Endpoint, "/"), Bucket: s3.Bucket, Key: s3.Key, Region: s3.Region,
			CredentialsDir: restoreCredsDir}
		vol = corev1.Volume{Name: restoreCredsVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: s3.CredentialsSecretRef.Name, DefaultMode: ptr.To[int32](0o440),
			Items: []corev1.KeyToPath{{Key: agent.AccessKeyIDKey, Path: agent.AccessKeyIDKey},
				{Key: agent.SecretAccessKeyKey, Path: agent.SecretAccessKeyKey}},
		}}}
		mounts = append(mounts, corev1.VolumeMount{Name: restoreCredsVolume, MountPath: restoreCredsDir, ReadOnly: true})
		if ref := s3.CABundleSecretRef; ref != nil {
			key := ref.Key
			if key == "" {
				key = v1alpha1.DefaultCABundleKey
			}
			// Only the bundle's key: the admission policy admits exactly
			// this key of this Secret (etcdfleet-workload-pod-secrets).
			extra = append(extra, corev1.Volume{Name: restoreCAVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: ref.Name, DefaultMode: ptr.To[int32](0o440), Items: []corev1.KeyToPath{{Key: key, Path: key}},
			}}})
			mounts = append(mounts, corev1.VolumeMount{Name: restoreCAVolume, MountPath: restoreCADir, ReadOnly: true})
			loc.CAFile = path.Join(restoreCADir, key)
		}
		args = append(args, agent.S3Args(loc)...)
	} else {
		pvc := r.Location.PVC
		args = append(args, "--file="+path.Join(restoreFileDir, path.Clean(pvc.Path)))
		vol = corev1.Volume{Name: restoreFileVolume, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
			ClaimName: pvc.ClaimName, ReadOnly: true,
		}}}
		mounts = append(mounts, corev1.VolumeMount{Name: restoreFileVolume, MountPath: restoreFileDir, ReadOnly: true})
	}
	c := corev1.Container{
		Name:                     RestoreContainerName,
		Image:                    image,
		Command:                  args,
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		VolumeMounts:             mounts,
		// Requests as small as the guard's, so that the Pod's effective
		// request stays the etcd container's; the restore is I/O bound.
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("10m"),
			corev1.ResourceMemory: resource.MustParse("64Mi"),
		}},
		SecurityContext: datadirguard.AgentSecurityContext(),
	}
	return []corev1.Container{c}, append([]corev1.Volume{vol}, extra...)
}
