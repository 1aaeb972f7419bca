package etcdmember

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/datadirguard"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

// replaceWipedMemoryMember handles a memory member whose data-dir guard
// refused to start etcd: its Pod is the same (a power loss restarts it in
// place) but its tmpfs came back empty, so the member is lost. It is
// removed, for a new member with a new ID, only while quorum holds
// without it; otherwise it says so and waits, and the guard keeps the old
// member from ever running again.
func (s *run) replaceWipedMemoryMember(ctx context.Context, p *corev1.Pod) (ctrl.Result, error) {
	_, guardMsg := datadirguard.DataDirLost(p)
	base := fmt.Sprintf("Pod %s restarted on an empty memory-backed data dir (%s)", p.Name, guardMsg)
	ok, why, err := s.quorumHoldsWithout(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !ok {
		s.setReady(false, v1alpha1.ReasonQuorumLost, base+"; not replacing it, quorum does not hold without it ("+why+
			"); it will not run again under its old ID")
		return s.writeAndRequeue(ctx, 10*s.r.Options.PausedRetry)
	}
	if s.cl.IsPaused() {
		s.setReady(false, v1alpha1.ReasonPodNotReady, base+"; replacement paused for this cluster")
		return s.writeAndRequeue(ctx, s.r.Options.PausedRetry)
	}
	d := s.cl.Gate.Reserve(ctx, s.gateRequest(gate.PodLossReplace, false))
	if d.Delay > 0 {
		throttled.WithLabelValues(s.cl.Name).Inc()
		s.setReady(false, v1alpha1.ReasonPodNotReady, base+"; waiting for the shared replacement rate limiter")
		return s.writeAndRequeue(ctx, d.Delay)
	}
	if err := s.cl.Client.Delete(ctx, s.m, client.Preconditions{UID: &s.m.UID}); client.IgnoreNotFound(err) != nil {
		d.Cancel()
		return ctrl.Result{}, err
	}
	replacements.WithLabelValues(s.cl.Name, string(gate.PodLossReplace), "DataDirLost").Inc()
	s.warn("MemoryMemberLost", "%s and quorum holds without it (%s); removing member %s so that a new member with a new ID replaces it",
		base, why, s.m.Name)
	return ctrl.Result{}, nil
}

func dataDirLost(p *corev1.Pod) bool {
	lost, _ := datadirguard.DataDirLost(p)
	return lost
}
