package etcdmember

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

// quorumLost reports, from the cached members, whether fewer than a
// majority of the etcd cluster's voters are Ready. It only orders the
// shared gate's queue, so a cached view is good enough here.
func (s *run) quorumLost(ctx context.Context) (bool, error) {
	members, err := etcd.Members(ctx, s.cl.Client, s.m.Namespace, s.m.Spec.ClusterName)
	if err != nil {
		return false, err
	}
	voters, ready := 0, 0
	for i := range members {
		if !members[i].Status.IsVoter {
			continue
		}
		voters++
		if meta.IsStatusConditionTrue(members[i].Status.Conditions, v1alpha1.ConditionReady) {
			ready++
		}
	}
	return ready < voters/2+1, nil
}

// quorumHoldsWithout reports whether the etcd cluster keeps quorum if this
// member goes, from live membership and endpoint health at decision time —
// not from a cached ready count, which can lag and make a destructive
// decision on stale data.
func (s *run) quorumHoldsWithout(ctx context.Context) (bool, string, error) {
	members, err := etcd.Members(ctx, s.cl.Reader, s.m.Namespace, s.m.Spec.ClusterName)
	if err != nil {
		return false, "", err
	}
	others := etcd.Select(members, s.m.Name)
	if len(others) == 0 {
		return false, "no other member to hold quorum", nil
	}
	t, err := etcd.TargetFor(ctx, s.cl.Reader, s.cl.Name, others)
	if err != nil {
		return false, "", err
	}
	_, list, err := s.cl.Etcd.MemberList(ctx, t)
	if err != nil {
		return false, "etcd membership unreadable: " + err.Error(), nil
	}
	voters, healthy := 0, 0
	byName := map[string]*v1alpha1.EtcdMember{}
	for i := range members {
		byName[members[i].Name] = &members[i]
	}
	for _, em := range list {
		if em.IsLearner {
			continue
		}
		voters++
		other := byName[em.Name]
		if other == nil || other.Name == s.m.Name {
			continue
		}
		if _, err := s.cl.Etcd.Status(ctx, t, etcd.MemberClientURL(other)); err == nil {
			healthy++
		}
	}
	need := voters/2 + 1
	return healthy >= need, fmt.Sprintf("%d of %d voters healthy without it, %d needed", healthy, voters, need), nil
}

// replaceCrashLooping deletes a member whose etcd keeps crashing, when
// quorum holds without it; the cluster reconciler then adds a new member.
func (s *run) replaceCrashLooping(ctx context.Context, p *corev1.Pod) (ctrl.Result, error) {
	base := fmt.Sprintf("etcd in Pod %s keeps crashing (%d restarts)", p.Name, restarts(p))
	ok, why, err := s.quorumHoldsWithout(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !ok {
		s.setReady(false, v1alpha1.ReasonPodNotReady, base+"; not replacing it: "+why)
		return s.writeAndRequeue(ctx, 10*s.r.Options.PausedRetry)
	}
	if s.cl.IsPaused() {
		s.setReady(false, v1alpha1.ReasonPodNotReady, base+"; replacement paused for this cluster")
		return s.writeAndRequeue(ctx, s.r.Options.PausedRetry)
	}
	d := s.cl.Gate.Reserve(ctx, s.gateRequest(gate.CrashLoopReplace, false))
	if d.Delay > 0 {
		s.setReady(false, v1alpha1.ReasonPodNotReady, base+"; waiting for the shared replacement rate limiter")
		return s.writeAndRequeue(ctx, d.Delay)
	}
	if err := s.cl.Client.Delete(ctx, s.m, client.Preconditions{UID: &s.m.UID}); client.IgnoreNotFound(err) != nil {
		d.Cancel()
		return ctrl.Result{}, err
	}
	replacements.WithLabelValues(s.cl.Name, string(gate.CrashLoopReplace), "CrashLoop").Inc()
	s.warn("ReplacingCrashLoopingMember", "%s and quorum holds without it (%s); removing member %s so that a new member replaces it", base, why, s.m.Name)
	return ctrl.Result{}, nil
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}
