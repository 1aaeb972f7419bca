package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

type stopKind int

const (
	stopDeleted   stopKind = iota // graceful delete: SIGTERM, grace, then the object goes
	stopVanished                  // the object is already gone: kill now
	stopRebooted                  // graceful node shutdown: terminal status stays
	stopPowerLoss                 // hard power loss: SIGKILL, nothing written
)

type stopRequest struct {
	kind  stopKind
	grace time.Duration
	// phase and status details written on stopRebooted.
	phase corev1.PodPhase
}

type exitEvent struct {
	c   *container
	gen int
}

// podWorker owns one Pod's processes, volumes, IP and status writes.
type podWorker struct {
	k    *Kubelet
	key  string
	uid  types.UID
	pod  *corev1.Pod
	dir  string
	stop chan stopRequest // requests; see stopPod
	quit chan struct{}    // closed when the worker begins to stop
	done chan struct{}    // closed when the worker has finished
	exit chan exitEvent

	mu          sync.Mutex
	ip          string
	released    bool         // resources freed; the IP stays in status but serves nothing
	containers  []*container // init containers first, in order
	mainStarted bool
	mounts      []mount
	started     time.Time
	last        *corev1.PodStatus // last status written
	// apiReady is the Pod's Ready condition as the API last showed it,
	// set by syncPod and taken by flushStatus; see noteAPIStatus.
	apiReady atomic.Pointer[corev1.ConditionStatus]
}

func newPodWorker(k *Kubelet, pod *corev1.Pod) *podWorker {
	return &podWorker{
		k: k, key: pod.Namespace + "/" + pod.Name, uid: pod.UID, pod: pod.DeepCopy(), dir: k.podDir(pod),
		stop: make(chan stopRequest), quit: make(chan struct{}), done: make(chan struct{}), exit: make(chan exitEvent),
	}
}

// stopPod asks the worker to stop and waits until it has.
func (w *podWorker) stopWith(r stopRequest) {
	select {
	case w.stop <- r:
	case <-w.done:
	}
	<-w.done
}

func (w *podWorker) stopNow(kind stopKind, grace time.Duration) {
	w.stopWith(stopRequest{kind: kind, grace: grace})
}

func (w *podWorker) podIP() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ip
}

// liveIP is the IP while the Pod's resources are held, else "".
func (w *podWorker) liveIP() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.released {
		return ""
	}
	return w.ip
}

func (w *podWorker) logf(format string, args ...any) {
	w.k.opts.Logf("kubelet %s: pod %s: %s", w.k.opts.Cluster, w.key, fmt.Sprintf(format, args...))
}

// run is the worker's whole life.
func (w *podWorker) run() {
	defer close(w.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if n := w.k.node(w.pod.Spec.NodeName); n != nil && w.k.admissionFails(n.name) {
		close(w.quit)
		w.writeTerminal(ctx, corev1.PodFailed, "UnexpectedAdmissionError",
			"Pod was rejected: Unexpected error while attempting to admit the pod: sandbox: admission failure injected", false)
		return
	}
	if req, stopped := w.setUp(ctx); stopped {
		w.tearDown(ctx, req)
		return
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case req := <-w.stop:
			w.tearDown(ctx, req)
			return
		case ev := <-w.exit:
			if w.onExit(ev) {
				w.finishCompleted(ctx)
				return
			}
		case <-tick.C:
			w.tickContainers()
		}
		w.flushStatus(ctx)
	}
}

// setUp prepares volumes and the IP, then starts the containers. It retries
// missing volumes (a PVC or Secret not there yet) until stopped.
func (w *podWorker) setUp(ctx context.Context) (stopRequest, bool) {
	for {
		mounts, err := w.prepareVolumes(ctx)
		if err == nil {
			w.mu.Lock()
			w.mounts = mounts
			w.mu.Unlock()
			break
		}
		w.logf("volumes not ready: %v", err)
		select {
		case req := <-w.stop:
			return req, true
		case <-time.After(300 * time.Millisecond):
		}
	}
	ip, err := w.k.opts.IPs.Allocate()
	if err != nil {
		w.logf("no IP: %v", err)
		return <-w.stop, true
	}
	w.mu.Lock()
	w.ip = ip
	w.started = time.Now()
	w.mu.Unlock()
	if names := w.dnsNames(); len(names) > 0 && w.k.opts.Hosts != nil {
		// Before the process starts: a joining member resolves every peer.
		if err := w.k.opts.Hosts.Set(w.key, ip, names...); err != nil {
			w.logf("hosts: %v", err)
		}
	}
	w.k.refreshServices()
	var cs []*container
	for i := range w.pod.Spec.InitContainers {
		cs = append(cs, newContainer(w, &w.pod.Spec.InitContainers[i], true))
	}
	for i := range w.pod.Spec.Containers {
		cs = append(cs, newContainer(w, &w.pod.Spec.Containers[i], false))
	}
	w.mu.Lock()
	w.containers = cs
	w.mu.Unlock()
	w.advance()
	w.flushStatus(ctx)
	return stopRequest{}, false
}

// advance starts what comes next in a new sandbox: the first init
// container that has not completed, each to completion in order, and once
// all have, the containers together.
func (w *podWorker) advance() {
	for _, c := range w.snapshotContainers() {
		if !c.init {
			continue
		}
		switch c.initState() {
		case initCompleted:
			continue
		case initNotStarted:
			if c.binary == "" {
				c.completeWithoutProcess()
				continue
			}
			c.start()
		}
		return // running, backing off, or failed for good
	}
	if w.mainStarted {
		return
	}
	w.mainStarted = true
	for _, c := range w.snapshotContainers() {
		if !c.init {
			c.start()
		}
	}
}

// dnsNames are the names the Pod answers to: <hostname>.<subdomain>.<ns>.svc.
func (w *podWorker) dnsNames() []string {
	s := w.pod.Spec
	if s.Hostname == "" || s.Subdomain == "" {
		return nil
	}
	base := fmt.Sprintf("%s.%s.%s.svc", s.Hostname, s.Subdomain, w.pod.Namespace)
	return []string{base, base + "." + w.k.opts.ClusterDomain}
}

// tickContainers restarts crashed containers whose backoff expired and runs
// due probes.
func (w *podWorker) tickContainers() {
	now := time.Now()
	for _, c := range w.snapshotContainers() {
		c.tick(now)
	}
}

func (w *podWorker) snapshotContainers() []*container {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]*container(nil), w.containers...)
}

// onExit records a container exit; it returns true when the Pod completed:
// every container exited and none will restart, or an init container
// failed and may not restart (restartPolicy Never).
func (w *podWorker) onExit(ev exitEvent) bool {
	if !ev.c.exited(ev.gen) {
		return false
	}
	if ev.c.init {
		switch ev.c.initState() {
		case initCompleted:
			w.advance()
		case initFailed:
			return true
		}
		return false
	}
	for _, c := range w.snapshotContainers() {
		if !c.init && !c.finished() {
			return false
		}
	}
	return true
}

func (w *podWorker) finishCompleted(ctx context.Context) {
	close(w.quit)
	w.releaseResources()
	phase := corev1.PodSucceeded
	for _, c := range w.snapshotContainers() {
		if c.lastExitCode() != 0 {
			phase = corev1.PodFailed
		}
	}
	w.writeTerminal(ctx, phase, "", "", false)
}

// tearDown stops the containers and releases what the Pod held.
func (w *podWorker) tearDown(ctx context.Context, req stopRequest) {
	close(w.quit)
	grace := req.grace
	if req.kind == stopVanished || req.kind == stopPowerLoss {
		grace = 0
	}
	var wg sync.WaitGroup
	for _, c := range w.snapshotContainers() {
		wg.Add(1)
		go func() { defer wg.Done(); c.kill(grace) }()
	}
	wg.Wait()
	if req.kind == stopPowerLoss {
		w.powerOff()
		return
	}
	w.releaseResources()
	if req.kind == stopRebooted {
		w.writeTerminal(ctx, req.phase, "Terminated", "Pod was terminated in response to imminent node shutdown.", true)
	}
}

// releaseResources frees the IP name, and removes emptyDirs and projected
// files; PVC directories stay with their claim.
func (w *podWorker) releaseResources() {
	if w.k.opts.Hosts != nil {
		_ = w.k.opts.Hosts.Delete(w.key)
	}
	w.mu.Lock()
	w.released = true
	w.mu.Unlock()
	w.k.refreshServices()
	_ = os.RemoveAll(filepath.Join(w.dir, "volumes"))
}

// powerOff is what a power loss leaves: no process, no IP, an empty
// tmpfs, and every disk volume as it was. The status stays as the API had
// it: a dead kubelet writes nothing.
func (w *podWorker) powerOff() {
	if w.k.opts.Hosts != nil {
		_ = w.k.opts.Hosts.Delete(w.key)
	}
	w.mu.Lock()
	w.released = true
	w.mu.Unlock()
	w.k.refreshServices()
	w.wipeMemoryVolumes()
}

// crash makes the etcd container exit non-zero (SIGKILL: exit code 137).
func (w *podWorker) crash() bool {
	hit := false
	for _, c := range w.snapshotContainers() {
		if c.signal(syscall.SIGKILL) {
			hit = true
		}
	}
	return hit
}
