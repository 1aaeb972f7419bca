package bench

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// PodEvent is one Pod change as the apiserver's watch reported it.
type PodEvent struct {
	Type     watch.EventType
	Name     string
	UID      types.UID
	Phase    corev1.PodPhase
	Ready    bool
	Deleting bool
	At       time.Time
	// RV is the Pod's resourceVersion in the event: where it falls among
	// other reads of the same apiserver.
	RV string
}

// Terminal reports whether the event shows the Pod Succeeded or Failed.
func (e PodEvent) Terminal() bool {
	return e.Phase == corev1.PodSucceeded || e.Phase == corev1.PodFailed
}

// PodRecorder records the Pod watch events of one namespace with their
// arrival time. It is e2eutil.PodLog plus readiness, deletion and the
// latest state of every Pod, which benchmarks need to time a member from
// terminal to replaced to Ready, and to know when a fleet has healed
// without listing Pods in a loop.
type PodRecorder struct {
	mu     sync.Mutex
	events []PodEvent
	latest map[string]PodEvent // by Pod name; DELETED removes
	err    error
	stop   context.CancelFunc
	done   chan struct{}
}

// RecordPods starts recording from the current state of ns: Pods that
// exist now are its latest state, not events. Call Stop when done.
func RecordPods(ctx context.Context, cs kubernetes.Interface, ns string) (*PodRecorder, error) {
	ctx, cancel := context.WithCancel(ctx)
	r := &PodRecorder{latest: map[string]PodEvent{}, stop: cancel, done: make(chan struct{})}
	rv, err := r.relist(ctx, cs, ns)
	if err != nil {
		cancel()
		return nil, err
	}
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
	if err != nil {
		cancel()
		return nil, err
	}
	go r.run(ctx, cs, ns, w, rv)
	return r, nil
}

// relist replaces the latest state with a list and returns its version.
func (r *PodRecorder) relist(ctx context.Context, cs kubernetes.Interface, ns string) (string, error) {
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.latest = map[string]PodEvent{}
	for i := range list.Items {
		r.latest[list.Items[i].Name] = podEvent("", &list.Items[i], now)
	}
	return list.ResourceVersion, nil
}

// run consumes the watch and resumes it from the last version seen if the
// apiserver closes it (it does so after its request timeout).
func (r *PodRecorder) run(ctx context.Context, cs kubernetes.Interface, ns string, w watch.Interface, rv string) {
	defer close(r.done)
	for {
		rv = r.consume(w, rv)
		w.Stop()
		if ctx.Err() != nil {
			return
		}
		var err error
		if rv == "" { // the watch reported an error: start over from a list
			if rv, err = r.relist(ctx, cs, ns); err != nil {
				r.fail(err)
				return
			}
		}
		if w, err = cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}); err != nil {
			r.fail(err)
			return
		}
	}
}

// consume records events until the watch ends; it returns the last
// resourceVersion seen, or "" after an error event.
func (r *PodRecorder) consume(w watch.Interface, rv string) string {
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			return ""
		}
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			continue
		}
		rv = p.ResourceVersion
		if ev.Type == watch.Bookmark {
			continue
		}
		e := podEvent(ev.Type, p, time.Now())
		r.mu.Lock()
		r.events = append(r.events, e)
		if ev.Type == watch.Deleted {
			delete(r.latest, p.Name)
		} else {
			r.latest[p.Name] = e
		}
		r.mu.Unlock()
	}
	return rv
}

func (r *PodRecorder) fail(err error) {
	r.mu.Lock()
	r.err = err
	r.mu.Unlock()
}

func podEvent(t watch.EventType, p *corev1.Pod, at time.Time) PodEvent {
	e := PodEvent{Type: t, Name: p.Name, UID: p.UID, Phase: p.Status.Phase, Deleting: p.DeletionTimestamp != nil, At: at, RV: p.ResourceVersion}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			e.Ready = c.Status == corev1.ConditionTrue
		}
	}
	return e
}

// Stop ends the recording.
func (r *PodRecorder) Stop() { r.stop(); <-r.done }

// Err is why the recording stopped early, if it did.
func (r *PodRecorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Events returns a copy of what was recorded.
func (r *PodRecorder) Events() []PodEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]PodEvent(nil), r.events...)
}

// UIDs returns the UID of every Pod that exists now.
func (r *PodRecorder) UIDs() map[string]types.UID {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]types.UID, len(r.latest))
	for n, e := range r.latest {
		out[n] = e.UID
	}
	return out
}

// Replaced reports whether every Pod named in old now exists with another
// UID, Ready and not being deleted; if not, it says which is missing.
func (r *PodRecorder) Replaced(old map[string]types.UID) (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var waiting []string
	for n, uid := range old {
		e, ok := r.latest[n]
		switch {
		case !ok:
			waiting = append(waiting, n+": absent")
		case e.UID == uid:
			waiting = append(waiting, fmt.Sprintf("%s: old Pod (%s)", n, e.Phase))
		case !e.Ready || e.Deleting:
			waiting = append(waiting, fmt.Sprintf("%s: new Pod not Ready (%s)", n, e.Phase))
		}
	}
	sort.Strings(waiting)
	return len(waiting) == 0, strings.Join(waiting, ", ")
}

// Replacement is one member Pod's way through a reboot, from the
// apiserver's watch.
type Replacement struct {
	Name string
	// Terminal: the old Pod first seen Succeeded or Failed.
	Terminal time.Time
	// Deleted: the old Pod's DELETED event (the operator's delete; a
	// terminal Pod goes without grace).
	Deleted time.Time
	// Created: the ADDED event of the same name with a new UID.
	Created time.Time
	// Ready: the new Pod first seen Ready.
	Ready time.Time
	// NewUID is the new Pod's UID.
	NewUID types.UID
}

// DetectToReplace is Terminal → Created.
func (r Replacement) DetectToReplace() time.Duration { return r.Created.Sub(r.Terminal) }

// DetectToDelete is Terminal → Deleted: the operator noticing, its status
// write and the delete.
func (r Replacement) DetectToDelete() time.Duration { return r.Deleted.Sub(r.Terminal) }

// Start is Created → Ready: scheduling, etcd start and the readiness probe.
func (r Replacement) Start() time.Duration { return r.Ready.Sub(r.Created) }

// Replacements reconstructs, for every Pod named in old, its replacement.
// It fails if any step of any Pod was not seen.
func (r *PodRecorder) Replacements(old map[string]types.UID) ([]Replacement, error) {
	events := r.Events()
	names := make([]string, 0, len(old))
	for n := range old {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]Replacement, 0, len(old))
	for _, n := range names {
		rep := Replacement{Name: n}
		var newUID types.UID
		for _, e := range events {
			switch {
			case e.Name != n:
			case e.UID == old[n] && e.Type == watch.Deleted:
				rep.Deleted = e.At
			case e.UID == old[n] && e.Terminal() && rep.Terminal.IsZero():
				rep.Terminal = e.At
			case e.UID != old[n] && e.Type == watch.Added && newUID == "":
				newUID, rep.Created = e.UID, e.At
			case e.UID == newUID && newUID != "" && e.Ready && rep.Ready.IsZero():
				rep.Ready = e.At
			}
		}
		if rep.Terminal.IsZero() || rep.Deleted.IsZero() || rep.Created.IsZero() || rep.Ready.IsZero() {
			return nil, fmt.Errorf("pod %s: terminal %s, deleted %s, replacement created %s, ready %s (zero = not seen)", n,
				rep.Terminal.Format(time.StampMilli), rep.Deleted.Format(time.StampMilli), rep.Created.Format(time.StampMilli), rep.Ready.Format(time.StampMilli))
		}
		rep.NewUID = newUID
		out = append(out, rep)
	}
	return out, nil
}
