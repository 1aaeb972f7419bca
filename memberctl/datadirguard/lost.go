package datadirguard

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// DataDirLost reports whether the Pod's guard refused to start etcd because
// the member's data directory was wiped, with the guard's message. It reads
// the guard's current and last termination states: with restartPolicy
// Always the kubelet keeps retrying the guard, so between two tries the
// failure sits in lastState.
func DataDirLost(p *corev1.Pod) (bool, string) {
	if p == nil {
		return false, ""
	}
	for _, cs := range p.Status.InitContainerStatuses {
		if cs.Name != ContainerName {
			continue
		}
		for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
			// The message is the Pod status's, which whoever controls the
			// workload cluster can write: it must be in the guard's format
			// ("DataDirLost: ..."), and no more of it is passed on (into
			// conditions) than the kubelet keeps of a real one.
			if t != nil && t.ExitCode != 0 && strings.HasPrefix(t.Message, MessagePrefix+":") {
				return true, truncate(t.Message, maxMessage)
			}
		}
	}
	return false, ""
}
