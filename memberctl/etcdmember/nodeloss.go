package etcdmember

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/etcdfleet/etcdfleet/memberctl/gate"
	"github.com/etcdfleet/etcdfleet/memberctl/replacement"
)

// A node that never comes back: its Pods are evicted by the taint manager
// (etcdfleet's tolerate an unreachable or not-ready node for
// pod.NodeLossTolerationSeconds), but only a kubelet finishes a delete, so
// the Pod stays terminating for as long as the node is gone, and its
// member with it. Past spec.recovery.nodeLossTimeout after the Pod's
// deletion deadline, the member is replaced elsewhere by a new member.
// A node that comes back in time finishes the delete itself, and the
// member is recreated on its claim as after any Pod loss. The
// out-of-service taint needs nothing of its own: PodGC force-deletes the
// Pod, which is then simply gone.

// nodeLossLeft returns how long the terminating Pod p has left before its
// node counts as lost, and false when node-loss replacement is off for the
// member (or the Pod is not terminating).
func (s *run) nodeLossLeft(ctx context.Context, p *corev1.Pod) (time.Duration, bool, error) {
	if p == nil || p.DeletionTimestamp == nil {
		return 0, false, nil
	}
	ec, err := s.parent(ctx)
	if err != nil || ec == nil || ec.DeletionTimestamp != nil {
		return 0, false, err
	}
	timeout := ec.Spec.Recovery.NodeLossTimeoutFor(s.m.Spec.Storage.Medium)
	if timeout <= 0 {
		return 0, false, nil
	}
	return p.DeletionTimestamp.Add(timeout).Sub(s.now), true, nil
}

// replaceNodeLostMember removes a member whose Pod its node never
// finished deleting, when quorum holds without it; the cluster reconciler
// then adds a new member, scheduled on a node that runs. A PVC member
// loses its claim too (it goes with the member): its node, and perhaps its
// volume, are gone, and etcd copies the data to the new member.
func (s *run) replaceNodeLostMember(ctx context.Context, p *corev1.Pod) (ctrl.Result, error) {
	died := fmt.Sprintf("Pod %s has been terminating since %s on node %s, which never finished it",
		p.Name, p.DeletionTimestamp.UTC().Format(time.RFC3339), orNone(p.Spec.NodeName))
	return s.removeMember(ctx, job{
		action: gate.NodeLossReplace,
		cause:  replacement.Cause{Phase: string(p.Status.Phase), Reason: "NodeLost"},
		podUID: p.UID,
		died:   died,
		check: func(ctx context.Context) (safety, error) {
			// The cache may lag: the node may have come back and finished it.
			live, err := s.livePod(ctx)
			switch {
			case err != nil:
				return safety{}, err
			case live == nil || live.UID != p.UID || live.DeletionTimestamp == nil:
				return safety{why: "its Pod is no longer stuck terminating"}, nil
			}
			return s.quorumWithoutSafety(ctx)
		},
	}, "ReplacingNodeLostMember", func() string { return "quorum holds without it" })
}
