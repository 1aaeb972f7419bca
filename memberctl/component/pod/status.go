package pod

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcdfleet/etcdfleet/memberctl/component"
)

const (
	// DefaultStuckRestartThreshold is the restart count from which
	// EtcdContainerStuck considers a not-ready etcd container stuck.
	DefaultStuckRestartThreshold int32 = 5

	// ReasonShutdownTerminated is the Pod status reason the kubelet sets on
	// Pods it stops during a graceful node shutdown.
	ReasonShutdownTerminated = "Terminated"

	reasonOOMKilled = "OOMKilled"
)

// IsTerminal reports whether p reached a phase it never leaves. A bare Pod
// in Succeeded or Failed is not restarted by anyone, whatever its
// restartPolicy; only a replacement brings the member back.
func IsTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// IsShutdownTermination reports whether p was stopped from outside rather
// than by etcd failing: a graceful node shutdown (reason Terminated) or a
// disruption (DisruptionTarget=True: eviction, preemption, taint manager,
// out-of-service node). Such replacements need not count against a cap.
func IsShutdownTermination(p *corev1.Pod) bool {
	if p.Status.Reason == ReasonShutdownTerminated {
		return true
	}
	return conditionTrue(p, corev1.DisruptionTarget)
}

// IsReady reports whether p's Ready condition is True.
func IsReady(p *corev1.Pod) bool { return conditionTrue(p, corev1.PodReady) }

// IsServing reports whether p is up: Ready, not stopped for good and not
// being deleted. A Pod's status lags neither its deletion nor its stop,
// while its member's Ready status lags both by a reconcile.
func IsServing(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && !IsTerminal(p) && IsReady(p)
}

// OwnedBy reports whether p's controller ownerRef has the given UID.
func OwnedBy(p *corev1.Pod, uid types.UID) bool { return component.ControlledBy(p, uid) }

// EtcdContainerStuck reports whether the etcd container of a live Pod keeps
// failing: it is not ready and has restarted at least threshold times,
// and the last failure was not an OOM kill. OOM kills are excluded because
// a replacement gets the same resources and would die the same way, so
// replacing it would only cost a membership change.
func EtcdContainerStuck(p *corev1.Pod, threshold int32) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	cs := etcdStatus(p)
	if cs == nil || cs.Ready || cs.RestartCount < threshold {
		return false
	}
	for _, t := range []*corev1.ContainerStateTerminated{cs.LastTerminationState.Terminated, cs.State.Terminated} {
		if t != nil && t.Reason == reasonOOMKilled {
			return false
		}
	}
	return true
}

// crashRecent is how long after its last crash a container that reached
// the crash-loop threshold still counts as crash-looping although it is
// Ready: longer than the kubelet's 10 s first back-off, so a container
// that answers between two crashes is never taken for a steady one.
const crashRecent = 30 * time.Second

// EtcdContainerCrashing: the etcd container is stuck (EtcdContainerStuck),
// or it is Ready now but restarted threshold times or more, the last time
// less than crashRecent before now.
func EtcdContainerCrashing(p *corev1.Pod, threshold int32, now time.Time) bool {
	if EtcdContainerStuck(p, threshold) {
		return true
	}
	cs := etcdStatus(p)
	if cs == nil || cs.RestartCount < threshold || p.DeletionTimestamp != nil {
		return false
	}
	t := cs.LastTerminationState.Terminated
	return t != nil && now.Sub(t.FinishedAt.Time) < crashRecent
}

// TerminationReason says why p stopped, for recording with a replacement:
// the Pod's status reason (e.g. Terminated, Evicted,
// UnexpectedAdmissionError), else the etcd container's terminated reason,
// current or last (e.g. Error, Completed).
func TerminationReason(p *corev1.Pod) string {
	if p.Status.Reason != "" {
		return p.Status.Reason
	}
	cs := etcdStatus(p)
	if cs == nil {
		return ""
	}
	if t := cs.State.Terminated; t != nil {
		return t.Reason
	}
	if t := cs.LastTerminationState.Terminated; t != nil {
		return t.Reason
	}
	return ""
}

func etcdStatus(p *corev1.Pod) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == ContainerName {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

func conditionTrue(p *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
