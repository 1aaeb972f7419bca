package kubelet

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// completeWithoutProcess finishes an init container that has nothing to
// run (an image the sandbox does not execute) as if it exited 0 at once.
func (c *container) completeWithoutProcess() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.waiting = nil
	c.startedAt = metav1.Now()
	c.lastTerm = &corev1.ContainerStateTerminated{Reason: "Completed", StartedAt: c.startedAt, FinishedAt: c.startedAt}
	c.done, c.ready = true, true
}

// initState tells where an init container stands.
func (c *container) initState() initState {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.done && c.lastTerm != nil && c.lastTerm.ExitCode == 0:
		return initCompleted
	case c.done:
		return initFailed
	case c.gen == 0:
		return initNotStarted
	}
	return initRunning // or backing off before a retry
}

type initState int

const (
	initNotStarted initState = iota
	initRunning
	initCompleted
	initFailed
)
