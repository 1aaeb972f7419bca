package e2eutil

import (
	"context"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// PodEvent is one change seen on the apiserver's watch.
type PodEvent struct {
	Type  watch.EventType
	Name  string
	UID   string
	Phase corev1.PodPhase
	// Ready is the Pod's Ready condition at that moment.
	Ready bool
	At    time.Time
}

// PodLog records Pod watch events in a namespace, as the apiserver reports
// them.
type PodLog struct {
	mu     sync.Mutex
	start  map[string]bool // Pod name → Ready, in the list the watch starts from
	events []PodEvent
	stop   context.CancelFunc
	done   chan struct{}
}

// ReadyAtStart is each Pod's readiness in the list the watch starts from:
// replaying the events over it gives the readiness at every instant, with
// no change lost between a separate read and the watch.
func (l *PodLog) ReadyAtStart() map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.start)
}

// WatchPods starts recording; call Stop when done.
func WatchPods(ctx context.Context, cs kubernetes.Interface, ns string) (*PodLog, error) {
	ctx, cancel := context.WithCancel(ctx)
	// Watch from the list's resourceVersion: a watch from "" would begin
	// with synthetic ADDED events for Pods that already exist.
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		return nil, err
	}
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		cancel()
		return nil, err
	}
	l := &PodLog{stop: cancel, done: make(chan struct{}), start: map[string]bool{}}
	for i := range list.Items {
		l.start[list.Items[i].Name] = PodReady(&list.Items[i])
	}
	go func() {
		defer close(l.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			l.mu.Lock()
			l.events = append(l.events, PodEvent{Type: ev.Type, Name: p.Name, UID: string(p.UID), Phase: p.Status.Phase, Ready: PodReady(p), At: time.Now()})
			l.mu.Unlock()
		}
	}()
	return l, nil
}

// Stop ends the watch.
func (l *PodLog) Stop() { l.stop(); <-l.done }

// Events returns a copy of what was recorded.
func (l *PodLog) Events() []PodEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]PodEvent(nil), l.events...)
}

// Count returns how many events of type t each Pod name had.
func (l *PodLog) Count(t watch.EventType) map[string]int {
	out := map[string]int{}
	for _, e := range l.Events() {
		if e.Type == t {
			out[e.Name]++
		}
	}
	return out
}

// FirstTerminal returns, per Pod UID, when it was first seen Succeeded or Failed.
func (l *PodLog) FirstTerminal() map[string]PodEvent {
	out := map[string]PodEvent{}
	for _, e := range l.Events() {
		if _, seen := out[e.UID]; !seen && (e.Phase == corev1.PodSucceeded || e.Phase == corev1.PodFailed) {
			out[e.UID] = e
		}
	}
	return out
}
