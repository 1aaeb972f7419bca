package kubelet

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// RebootOptions shape a simulated graceful node shutdown.
type RebootOptions struct {
	// Phase chooses the terminal phase written for each Pod (default
	// Failed; some kubelets write Succeeded, and a mix is possible).
	Phase func(pod *corev1.Pod) corev1.PodPhase
	// Grace is how long processes get between SIGTERM and SIGKILL (default 3 s).
	Grace time.Duration
	// Outage keeps the Node NotReady this long before it is Ready again.
	Outage time.Duration
}

// AllFailed, AllSucceeded and Alternate are ready-made Phase choosers.
func AllFailed(*corev1.Pod) corev1.PodPhase    { return corev1.PodFailed }
func AllSucceeded(*corev1.Pod) corev1.PodPhase { return corev1.PodSucceeded }

// Alternate picks Failed or Succeeded by the parity of the Pod name's last
// byte: a stable mix (ec-0, ec-1, ec-2 get Succeeded, Failed, Succeeded).
func Alternate(p *corev1.Pod) corev1.PodPhase {
	if p.Name == "" || p.Name[len(p.Name)-1]%2 == 0 {
		return corev1.PodSucceeded
	}
	return corev1.PodFailed
}

// RebootNode simulates the kubelet's graceful node shutdown: the Node goes
// NotReady, every process on it gets SIGTERM, and each Pod is left terminal
// (reason Terminated, DisruptionTarget=True) and is never restarted. The
// Node returns Ready after opts.Outage, in the background.
func (k *Kubelet) RebootNode(ctx context.Context, node string, opts RebootOptions) error {
	if opts.Phase == nil {
		opts.Phase = AllFailed
	}
	if opts.Grace == 0 {
		opts.Grace = 3 * time.Second
	}
	if err := k.SetNodeReady(ctx, node, false); err != nil {
		return err
	}
	k.mu.Lock()
	var victims []*podWorker
	for _, w := range k.workers {
		if w.pod.Spec.NodeName == node {
			victims = append(victims, w)
		}
	}
	k.mu.Unlock()
	var wg sync.WaitGroup
	for _, w := range victims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.stopWith(stopRequest{kind: stopRebooted, grace: opts.Grace, phase: opts.Phase(w.pod)})
		}()
	}
	wg.Wait()
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		select {
		case <-time.After(opts.Outage):
		case <-k.stopCh():
			return
		}
		if err := k.SetNodeReady(context.Background(), node, true); err != nil {
			k.opts.Logf("kubelet %s: node %s did not come back: %v", k.opts.Cluster, node, err)
		}
	}()
	return nil
}

// RebootAll reboots every Node at once.
func (k *Kubelet) RebootAll(ctx context.Context, opts RebootOptions) error {
	var wg sync.WaitGroup
	names := k.NodeNames()
	errs := make([]error, len(names))
	for i, n := range names {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = k.RebootNode(ctx, n, opts) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// FailAdmission makes new Pods on node fail with UnexpectedAdmissionError
// (fail=true) or admits them again (fail=false).
func (k *Kubelet) FailAdmission(node string, fail bool) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := k.nodes[node]
	if n == nil {
		return fmt.Errorf("unknown node %q", node)
	}
	n.failAdmission = fail
	return nil
}

func (k *Kubelet) admissionFails(node string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := k.nodes[node]
	return n != nil && n.failAdmission
}

// TerminatePod leaves one Pod as RebootNode leaves every Pod of its Node
// (SIGTERM, opts.Grace, then terminal in phase opts.Phase, reason
// Terminated, never restarted) while its Node stays Ready: a fault of one
// member alone, whatever else its Node runs. opts.Outage is not used.
func (k *Kubelet) TerminatePod(namespace, pod string, opts RebootOptions) error {
	if opts.Phase == nil {
		opts.Phase = AllFailed
	}
	if opts.Grace == 0 {
		opts.Grace = 3 * time.Second
	}
	k.mu.Lock()
	w := k.workers[namespace+"/"+pod]
	k.mu.Unlock()
	if w == nil {
		return fmt.Errorf("pod %s/%s is not running here", namespace, pod)
	}
	w.stopWith(stopRequest{kind: stopRebooted, grace: opts.Grace, phase: opts.Phase(w.pod)})
	return nil
}

// Crash makes the Pod's etcd process exit non-zero; restartPolicy decides
// what follows.
func (k *Kubelet) Crash(namespace, pod string) error {
	k.mu.Lock()
	w := k.workers[namespace+"/"+pod]
	k.mu.Unlock()
	if w == nil || !w.crash() {
		return fmt.Errorf("pod %s/%s has no running process", namespace, pod)
	}
	return nil
}

// markFinished records that a Pod reached a terminal phase here, so that a
// stale cache can never make the kubelet start it again.
func (k *Kubelet) markFinished(uid types.UID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.finished == nil {
		k.finished = map[types.UID]bool{}
	}
	k.finished[uid] = true
}

func (k *Kubelet) wasFinished(uid types.UID) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.finished[uid]
}
