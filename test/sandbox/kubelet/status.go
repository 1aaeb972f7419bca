package kubelet

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ownedConditions are the Pod conditions this kubelet writes; others (set by
// controllers) are preserved on every write.
var ownedConditions = map[corev1.PodConditionType]bool{
	corev1.PodScheduled: true, corev1.PodInitialized: true, corev1.ContainersReady: true,
	corev1.PodReady: true, corev1.DisruptionTarget: true,
}

// buildStatus reports the running Pod as the kubelet does.
func (w *podWorker) buildStatus() corev1.PodStatus {
	w.mu.Lock()
	ip, started := w.ip, w.started
	w.mu.Unlock()
	st := corev1.PodStatus{Phase: corev1.PodPending, HostIP: "127.0.0.1"}
	if ip != "" {
		st.PodIP = ip
		st.PodIPs = []corev1.PodIP{{IP: ip}}
		st.HostIPs = []corev1.HostIP{{IP: "127.0.0.1"}}
		t := metav1.NewTime(started)
		st.StartTime = &t
	}
	allReady, anyStarted, initialized := true, false, true
	var incomplete, unready []string
	for _, c := range w.snapshotContainers() {
		cs := c.status()
		if c.init {
			if c.initState() != initCompleted {
				initialized = false
				incomplete = append(incomplete, cs.Name)
			}
			st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
			continue
		}
		if cs.State.Running != nil {
			anyStarted = true
		}
		if !cs.Ready {
			allReady = false
			unready = append(unready, cs.Name)
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	if len(st.ContainerStatuses) == 0 {
		allReady = false
	}
	// Pending until every init container completed, as the kubelet reports
	// a new sandbox.
	if initialized && (anyStarted || len(st.ContainerStatuses) > 0 && ip != "") {
		st.Phase = corev1.PodRunning
	}
	initCond := cond(corev1.PodInitialized, initialized, "ContainersNotInitialized")
	if !initialized {
		initCond.Message = fmt.Sprintf("containers with incomplete status: %v", incomplete)
	}
	readyCond := cond(corev1.ContainersReady, allReady, "ContainersNotReady")
	if len(unready) > 0 {
		readyCond.Message = fmt.Sprintf("containers with unready status: %v", unready)
	}
	podReady := readyCond
	podReady.Type = corev1.PodReady
	st.Conditions = []corev1.PodCondition{cond(corev1.PodScheduled, true, ""), initCond, readyCond, podReady}
	return st
}

func cond(t corev1.PodConditionType, ok bool, falseReason string) corev1.PodCondition {
	if ok {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue}
	}
	return corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: falseReason}
}

func (c *container) status() corev1.ContainerStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs := corev1.ContainerStatus{
		Name: c.spec.Name, Image: c.spec.Image, ImageID: "sandbox://" + c.spec.Image,
		Ready: c.ready, RestartCount: c.restarts, ContainerID: c.containerID(),
	}
	started := c.waiting == nil && !c.done
	cs.Started = &started
	switch {
	case c.done && c.lastTerm != nil:
		cs.State.Terminated = c.lastTerm.DeepCopy()
	case c.waiting != nil:
		cs.State.Waiting = c.waiting.DeepCopy()
		if c.lastTerm != nil {
			cs.LastTerminationState.Terminated = c.lastTerm.DeepCopy()
		}
	default:
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: c.startedAt}
		if c.lastTerm != nil {
			cs.LastTerminationState.Terminated = c.lastTerm.DeepCopy()
		}
	}
	return cs
}

// noteAPIStatus records the Pod's Ready condition as the API has it. The
// node lifecycle controller marks the Pods of a Node it lost touch with
// NotReady; a kubelet that is alive after all writes its own view back on
// its next status sync, as the real kubelet's status manager does when the
// API's status differs from its own.
func (w *podWorker) noteAPIStatus(st corev1.PodStatus) {
	r := readyOf(st)
	w.apiReady.Store(&r)
}

func readyOf(st corev1.PodStatus) corev1.ConditionStatus {
	for _, c := range st.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status
		}
	}
	return ""
}

// flushStatus writes the status when it changed since the last write, or
// when the API shows a readiness other than the one last written.
func (w *podWorker) flushStatus(ctx context.Context) {
	if r := w.apiReady.Swap(nil); r != nil && w.last != nil && *r != readyOf(*w.last) {
		w.last = nil
	}
	st := w.buildStatus()
	if w.last != nil && equality.Semantic.DeepEqual(*w.last, st) {
		return
	}
	if w.writeStatus(ctx, st) {
		w.last = &st
	}
}

// writeTerminal writes a final status: phase, reason and message, and for a
// node shutdown the DisruptionTarget condition the kubelet adds.
func (w *podWorker) writeTerminal(ctx context.Context, phase corev1.PodPhase, reason, msg string, shutdown bool) {
	st := w.buildStatus()
	st.Phase, st.Reason, st.Message = phase, reason, msg
	terminateStatuses(st.InitContainerStatuses)
	terminateStatuses(st.ContainerStatuses)
	for i := range st.Conditions {
		if t := st.Conditions[i].Type; t == corev1.PodReady || t == corev1.ContainersReady {
			st.Conditions[i].Status, st.Conditions[i].Reason = corev1.ConditionFalse, "PodCompleted"
		}
	}
	if shutdown {
		st.Conditions = append(st.Conditions, corev1.PodCondition{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "TerminationByKubelet", Message: msg,
		})
	}
	w.k.markFinished(w.uid)
	w.writeStatus(ctx, st)
}

// terminateStatuses reports every container that ran as terminated; one
// that never started (waiting for init containers) stays waiting.
func terminateStatuses(list []corev1.ContainerStatus) {
	for i := range list {
		cs := &list[i]
		cs.Ready, cs.Started = false, new(bool)
		if cs.State.Terminated != nil || (cs.State.Waiting != nil && cs.State.Waiting.Reason == "PodInitializing") {
			continue
		}
		term := cs.LastTerminationState.Terminated
		if term == nil {
			term = &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "ContainerStatusUnknown",
				Message: "The container could not be located when the pod was terminated"}
		}
		cs.State = corev1.ContainerState{Terminated: term}
	}
}

// writeStatus stamps transition times, keeps foreign conditions and writes
// through the status subresource, retrying conflicts. False if the write
// failed for good (the Pod is gone, say).
func (w *podWorker) writeStatus(ctx context.Context, st corev1.PodStatus) bool {
	pods := w.k.opts.Client.CoreV1().Pods(w.pod.Namespace)
	var lastErr error
	err := retryOnError(ctx, func(ctx context.Context) error {
		cur, err := pods.Get(ctx, w.pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != w.uid {
			return nil // a newer Pod took the name
		}
		next := st.DeepCopy()
		now := metav1.Now()
		for i := range next.Conditions {
			c := &next.Conditions[i]
			c.LastTransitionTime = now
			for _, old := range cur.Status.Conditions {
				if old.Type == c.Type && old.Status == c.Status {
					c.LastTransitionTime = old.LastTransitionTime
				}
			}
		}
		for _, old := range cur.Status.Conditions {
			if !ownedConditions[old.Type] {
				next.Conditions = append(next.Conditions, old)
			}
		}
		// The apiserver sets the QoS class at creation; it is immutable.
		next.QOSClass = cur.Status.QOSClass
		cur.Status = *next
		_, err = pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		lastErr = err
		return err
	})
	if err != nil && lastErr != nil {
		w.logf("status write failed: %v", lastErr)
	}
	return err == nil
}
