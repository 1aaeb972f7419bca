package kubelet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// PowerLoss simulates a hard power loss of node: no shutdown signal, so
// every process on it is SIGKILLed at once and the kubelet dies with them.
//
//   - The Node's Lease is no longer renewed. The node lifecycle
//     controller marks the Node Ready=Unknown and its Pods NotReady once
//     its grace period passes (sandbox.NodeMonitorGracePeriod), and taints
//     it unreachable; past their tolerationSeconds the taint eviction
//     controller deletes its Pods. Nothing on the node acts on those
//     deletes until it boots.
//   - Until then Pods stay exactly as the API had them (usually Running
//     and Ready): nothing on the node writes any more.
//   - memory-backed emptyDirs are emptied; disk emptyDirs and PVC
//     directories keep their data.
//
// After outage the node boots in the background: the kubelet comes back,
// marks the Node Ready, finishes the deletes of Pods evicted meanwhile,
// and starts every other non-terminal Pod bound to it again in a new
// sandbox, same UID: init containers run again, and containers restart
// with restartCount+1 and lastState terminated (Unknown, 255). PowerOn
// boots it earlier.
func (k *Kubelet) PowerLoss(ctx context.Context, node string, outage time.Duration) error {
	k.mu.Lock()
	n := k.nodes[node]
	if n == nil {
		k.mu.Unlock()
		return fmt.Errorf("unknown node %q", node)
	}
	n.up, n.poweredOff = false, true
	n.outages++
	outageNo := n.outages
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
		go func() { defer wg.Done(); w.stopWith(stopRequest{kind: stopPowerLoss}) }()
	}
	wg.Wait()
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		select {
		case <-time.After(outage):
		case <-k.stopCh():
			return
		}
		if err := k.boot(node, outageNo); err != nil {
			k.opts.Logf("kubelet %s: node %s did not boot: %v", k.opts.Cluster, node, err)
		}
	}()
	return nil
}

// PowerOn boots a powered-off node now, before its outage ends. A spec
// that waits for what an outage causes (evictions past tolerationSeconds
// on a loaded machine) powers the node off for long and boots it once it
// saw that, instead of guessing a time that also holds under load.
func (k *Kubelet) PowerOn(node string) error {
	k.mu.Lock()
	n := k.nodes[node]
	if n == nil {
		k.mu.Unlock()
		return fmt.Errorf("unknown node %q", node)
	}
	outageNo := n.outages
	k.mu.Unlock()
	return k.boot(node, outageNo)
}

// boot brings a node's kubelet back after its outageNo-th power loss;
// SetNodeReady resyncs every Pod, which starts the node's Pods again. It
// does nothing when the node is up already or another outage owns it.
func (k *Kubelet) boot(node string, outageNo int) error {
	k.mu.Lock()
	n := k.nodes[node]
	if !n.poweredOff || n.outages != outageNo {
		k.mu.Unlock()
		return nil
	}
	n.poweredOff = false
	k.mu.Unlock()
	return k.SetNodeReady(context.Background(), node, true)
}

// PowerLossAll cuts the power of every Node at once.
func (k *Kubelet) PowerLossAll(ctx context.Context, outage time.Duration) error {
	names := k.NodeNames()
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = k.PowerLoss(ctx, n, outage) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}
