package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// mount maps a container path to the host directory backing it.
type mount struct {
	containerPath string
	hostPath      string
}

// prepareVolumes materialises the Pod's volumes and returns the mounts,
// longest container path first so nested mounts win in rewrite.
func (w *podWorker) prepareVolumes(ctx context.Context) ([]mount, error) {
	dirs := map[string]string{}
	for _, v := range w.pod.Spec.Volumes {
		dir, err := w.prepareVolume(ctx, v)
		if err != nil {
			return nil, fmt.Errorf("volume %q: %w", v.Name, err)
		}
		dirs[v.Name] = dir
	}
	var mounts []mount
	for _, c := range append(append([]corev1.Container(nil), w.pod.Spec.InitContainers...), w.pod.Spec.Containers...) {
		for _, vm := range c.VolumeMounts {
			dir, ok := dirs[vm.Name]
			if !ok {
				return nil, fmt.Errorf("container %s mounts unknown volume %q", c.Name, vm.Name)
			}
			host := filepath.Join(dir, vm.SubPath)
			if err := os.MkdirAll(host, 0o755); err != nil {
				return nil, err
			}
			mounts = append(mounts, mount{containerPath: filepath.Clean(vm.MountPath), hostPath: host})
		}
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i].containerPath) > len(mounts[j].containerPath) })
	return mounts, nil
}

func (w *podWorker) prepareVolume(ctx context.Context, v corev1.Volume) (string, error) {
	local := filepath.Join(w.dir, "volumes", v.Name)
	switch {
	case v.PersistentVolumeClaim != nil:
		return w.k.claimDir(ctx, w.pod.Namespace, v.PersistentVolumeClaim.ClaimName)
	case v.Secret != nil:
		s, err := w.k.opts.Client.CoreV1().Secrets(w.pod.Namespace).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
		if err != nil {
			if v.Secret.Optional != nil && *v.Secret.Optional {
				return local, os.MkdirAll(local, 0o755)
			}
			return "", err
		}
		return local, writeFiles(local, s.Data, v.Secret.Items)
	case v.ConfigMap != nil:
		cm, err := w.k.opts.Client.CoreV1().ConfigMaps(w.pod.Namespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		data := map[string][]byte{}
		for k, s := range cm.Data {
			data[k] = []byte(s)
		}
		return local, writeFiles(local, data, v.ConfigMap.Items)
	default: // emptyDir (any medium), projected tokens and the rest: a scratch dir
		return local, os.MkdirAll(local, 0o755)
	}
}

func writeFiles(dir string, data map[string][]byte, items []corev1.KeyToPath) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if len(items) == 0 {
		for k := range data {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
	}
	for _, it := range items {
		b, ok := data[it.Key]
		if !ok {
			return fmt.Errorf("key %q not found", it.Key)
		}
		p := filepath.Join(dir, it.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// wipeMemoryVolumes empties every medium: Memory emptyDir, as losing
// power empties a tmpfs. Disk emptyDirs live under the kubelet's pod
// directory and survive.
func (w *podWorker) wipeMemoryVolumes() {
	for _, v := range w.pod.Spec.Volumes {
		if v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory {
			_ = os.RemoveAll(filepath.Join(w.dir, "volumes", v.Name))
		}
	}
}

// claimDir binds the claim (there is no provisioner) and returns its host
// directory, which lives until the claim is deleted.
func (k *Kubelet) claimDir(ctx context.Context, ns, name string) (string, error) {
	pvc, err := k.opts.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if pvc.DeletionTimestamp != nil {
		return "", fmt.Errorf("claim %s/%s is being deleted", ns, name)
	}
	if pvc.Status.Phase != corev1.ClaimBound {
		pvc.Status.Phase = corev1.ClaimBound
		pvc.Status.AccessModes = pvc.Spec.AccessModes
		pvc.Status.Capacity = pvc.Spec.Resources.Requests
		if _, err := k.opts.Client.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
			return "", err
		}
	}
	dir := k.claimPath(pvc)
	return dir, os.MkdirAll(dir, 0o755)
}

func (k *Kubelet) claimPath(pvc *corev1.PersistentVolumeClaim) string {
	return filepath.Join(k.opts.Dir, "claims", string(pvc.UID))
}

// ClaimPath returns the host directory of a claim, for tests.
func (k *Kubelet) ClaimPath(pvc *corev1.PersistentVolumeClaim) string { return k.claimPath(pvc) }

// onClaimDeleted drops the directory: the data lives exactly as long as the claim.
func (k *Kubelet) onClaimDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return
	}
	_ = os.RemoveAll(k.claimPath(pvc))
}

// VolumePath returns the host directory of a non-PVC volume of a Pod, for
// tests (it exists only while the Pod runs).
func (k *Kubelet) VolumePath(pod *corev1.Pod, volume string) string {
	return filepath.Join(k.podDir(pod), "volumes", volume)
}
