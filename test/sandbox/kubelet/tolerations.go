package kubelet

import (
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// capTolerations shortens the Pod's NoExecute tolerationSeconds to
// Options.MaxTolerationSeconds before it is bound, the way the probes'
// periods are capped: Pods declare what a real cluster should wait (etcdfleet's
// 300 s), and the sandbox's taint eviction controller, which reads the
// Pod, acts on it in test time. The apiserver lets tolerationSeconds
// change on a live Pod; nothing else about its tolerations does. The
// write is guarded by the resourceVersion read: a conflict retries the
// whole scheduling with a fresh Pod.
func (k *Kubelet) capTolerations(ctx context.Context, pod *corev1.Pod) error {
	capped, changed := cappedTolerations(pod.Spec.Tolerations, k.opts.MaxTolerationSeconds)
	if !changed {
		return nil
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": pod.ResourceVersion},
		"spec":     map[string]any{"tolerations": capped},
	})
	if err != nil {
		return err
	}
	_, err = k.opts.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// cappedTolerations returns tolerations with every NoExecute
// tolerationSeconds above max lowered to max, and whether any was.
func cappedTolerations(tolerations []corev1.Toleration, max int64) ([]corev1.Toleration, bool) {
	out := make([]corev1.Toleration, len(tolerations))
	changed := false
	for i, t := range tolerations {
		out[i] = *t.DeepCopy()
		if t.Effect == corev1.TaintEffectNoExecute && t.TolerationSeconds != nil && *t.TolerationSeconds > max {
			out[i].TolerationSeconds = ptr.To(max)
			changed = true
		}
	}
	return out, changed
}
