package kubelet

import (
	"context"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A node's heartbeat is what tells the node lifecycle controller that its
// kubelet is alive: the kubelet renews the Node's Lease in kube-node-lease
// every renew interval, and posts the Node's status when it changed. The
// controller marks a Node whose Lease and status both stopped changing for
// its --node-monitor-grace-period Ready=Unknown, taints it unreachable and
// marks its Pods NotReady; the kubelet puts back whatever it still holds
// true (Node Ready, Pod readiness) on its next beat, as the real kubelet's
// node status loop and status manager do.

// heartbeat renews every live Node's Lease and repairs its Ready condition
// each Options.LeaseRenewInterval until ctx ends. A powered-off Node's
// kubelet is dead: it beats no more, which is how the controller learns of
// a power loss.
func (k *Kubelet) heartbeat(ctx context.Context) {
	t := time.NewTicker(k.opts.LeaseRenewInterval)
	defer t.Stop()
	for {
		var wg sync.WaitGroup
		for _, name := range k.NodeNames() {
			if k.poweredOff(name) {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A beat must not wait on a slow apiserver past the next one.
				ctx, cancel := context.WithTimeout(ctx, 2*k.opts.LeaseRenewInterval)
				defer cancel()
				k.beat(ctx, name)
			}()
		}
		wg.Wait()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// beat renews name's Lease and rewrites its Ready condition if the API
// disagrees with the kubelet (the controller set it Unknown meanwhile).
func (k *Kubelet) beat(ctx context.Context, name string) {
	if err := k.renewLease(ctx, name); err != nil && ctx.Err() == nil {
		k.opts.Logf("kubelet %s: node %s: lease not renewed: %v", k.opts.Cluster, name, err)
	}
	node, err := k.nodeLister.Get(name)
	if err != nil {
		return
	}
	want := corev1.ConditionFalse
	if k.nodeUp(name) {
		want = corev1.ConditionTrue
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == want {
			return
		}
	}
	if k.poweredOff(name) {
		return // the power went while this beat ran
	}
	if err := k.writeNodeStatus(ctx, name, want == corev1.ConditionTrue); err != nil && ctx.Err() == nil {
		k.opts.Logf("kubelet %s: node %s: status not repaired: %v", k.opts.Cluster, name, err)
	}
}

// renewLease sets the Lease's renewTime to now, creating the Lease (owned
// by its Node, as the kubelet does) when there is none. The last Lease
// written is kept, so a renewal is one write.
func (k *Kubelet) renewLease(ctx context.Context, name string) error {
	leases := k.opts.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	k.mu.Lock()
	lease := k.nodes[name].lease.DeepCopy()
	k.mu.Unlock()
	if lease == nil {
		cur, err := leases.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			node, err := k.nodeLister.Get(name)
			if err != nil {
				return err
			}
			cur = k.newLease(node)
			if cur, err = leases.Create(ctx, cur, metav1.CreateOptions{}); err != nil {
				return err
			}
		case err != nil:
			return err
		}
		lease = cur
	}
	lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	lease, err := leases.Update(ctx, lease, metav1.UpdateOptions{})
	if err != nil {
		lease = nil // read it again next time: someone else wrote it
	}
	k.mu.Lock()
	k.nodes[name].lease = lease
	k.mu.Unlock()
	return err
}

func (k *Kubelet) newLease(node *corev1.Node) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: node.Name, Namespace: corev1.NamespaceNodeLease,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(node.Name),
			// The kubelet renews at a quarter of the duration.
			LeaseDurationSeconds: ptr.To(max(1, int32(4*k.opts.LeaseRenewInterval/time.Second))),
		},
	}
}
