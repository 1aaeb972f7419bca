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
	if s3 := r.Location.S3; s3 != nil {
		args = append(args, "--s3-endpoint="+strings.TrimSuffix(s3.Endpoint, "/"), "--s3-bucket="+s3.Bucket,
			"--s3-key="+s3.Key, "--s3-region="+s3.Region, "--s3-credentials-dir="+restoreCredsDir)
		vol = corev1.Volume{Name: restoreCredsVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: s3.CredentialsSecretRef.Name, DefaultMode: ptr.To[int32](0o440),
			Items: []corev1.KeyToPath{{Key: agent.AccessKeyIDKey, Path: agent.AccessKeyIDKey},
				{Key: agent.SecretAccessKeyKey, Path: agent.SecretAccessKeyKey}},
		}}}
		mounts = append(mounts, corev1.VolumeMount{Name: restoreCredsVolume, MountPath: restoreCredsDir, ReadOnly: true})
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
	return []corev1.Container{c}, []corev1.Volume{vol}
}
