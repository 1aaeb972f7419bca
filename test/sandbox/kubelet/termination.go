package kubelet

import (
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// carryOver continues the counts of a Pod the API says already ran here:
// a kubelet booting after a power loss finds its containers gone and
// starts them again, one restart more, the lost run reported as
// terminated with reason Unknown and exit code 255.
func (c *container) carryOver(st corev1.PodStatus) {
	list := st.ContainerStatuses
	if c.init {
		list = st.InitContainerStatuses
	}
	for _, old := range list {
		if old.Name != c.spec.Name {
			continue
		}
		c.restarts = old.RestartCount
		c.lastTerm = old.LastTerminationState.Terminated.DeepCopy()
		switch {
		case old.State.Running != nil:
			c.restarts++
			c.lastTerm = &corev1.ContainerStateTerminated{ExitCode: 255, Reason: "Unknown",
				StartedAt: old.State.Running.StartedAt, FinishedAt: metav1.Now(), ContainerID: old.ContainerID}
		case old.State.Terminated != nil:
			c.restarts++
			c.lastTerm = old.State.Terminated.DeepCopy()
		}
	}
}

// terminated describes the run that just ended, with its termination
// message as the kubelet reads it: the file at terminationMessagePath
// (at most 4096 bytes), or with FallbackToLogsOnError and an empty file
// after a failure, the tail of this run's log. Called with c.mu held.
func (c *container) terminated(code int32) *corev1.ContainerStateTerminated {
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	return &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: c.terminationMessage(code),
		StartedAt: c.startedAt, FinishedAt: metav1.Now(), ContainerID: c.containerID()}
}

const maxTerminationMessage = 4096

func (c *container) terminationMessage(code int32) string {
	b, _ := os.ReadFile(c.termFile)
	if len(b) == 0 && code != 0 && c.spec.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
		if log, err := os.ReadFile(c.logPath()); err == nil && int64(len(log)) >= c.logOffset {
			b = log[c.logOffset:]
			if len(b) > 2048 { // the kubelet's fallback reads at most 2048 bytes
				b = b[len(b)-2048:]
			}
		}
	}
	if len(b) > maxTerminationMessage {
		b = b[:maxTerminationMessage]
	}
	return string(b)
}
