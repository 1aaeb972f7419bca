package etcdcluster

import (
	"context"
	"errors"
	"strings"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

// completePending adds a created member to etcd as a learner (unless etcd
// already lists its peer URL: a previous pass added it and then failed)
// and sets its initial cluster from etcd's own list. The member's Pod is
// created by the member controller only after that.
func (p *pass) completePending(ctx context.Context, m *v1alpha1.EtcdMember) (ctrl.Result, error) {
	if !p.etcd.ok {
		return ctrl.Result{RequeueAfter: requeueUnreachable}, nil
	}
	list := p.etcd.members
	peer := etcd.MemberPeerURL(m)
	if _, ok := etcd.FindMember(list, m.Name, peer); !ok {
		t, err := p.target(ctx, m.Name)
		if err != nil {
			return ctrl.Result{}, err
		}
		added, members, err := p.cl.Etcd.AddLearner(ctx, t, peer)
		if err != nil && isUnhealthy(err) {
			// etcd's strict reconfiguration check: no member is added
			// until every voter has been connected to the leader for its
			// HealthInterval (5 s). A power loss that takes the leader
			// with a member ends in exactly this, and the successor of the
			// lost member waits on it; retrying each second adds it within
			// a second of etcd allowing it, not up to requeueEtcd later.
			log.FromContext(ctx).Info("etcd does not add a member yet (a voter connected to the leader for less than 5 s); retrying",
				"member", m.Name, "error", err.Error())
			return ctrl.Result{RequeueAfter: requeueAddUnhealthy}, nil
		}
		if err != nil {
			log.FromContext(ctx).Info("adding a learner failed; retrying", "member", m.Name, "error", err.Error())
			p.event(corev1.EventTypeWarning, "AddLearnerFailed", "Adding member %s to etcd failed: %v", m.Name, err)
			return ctrl.Result{RequeueAfter: requeueEtcd}, nil
		}
		if _, ok := etcd.FindMember(members, "", peer); !ok {
			members = append(members, added)
		}
		list = members
		p.event(corev1.EventTypeNormal, "MemberAdded", "Added member %s to etcd as learner %s", m.Name, formatID(added.ID))
	}
	if err := p.patchInitialCluster(ctx, m, initialCluster(list)); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: requeueMembers}, nil
}

// scaleUp wakes a dormant member, or, once every member is Ready, promotes
// the learner there is or creates the next member.
func (p *pass) scaleUp(ctx context.Context) (ctrl.Result, error) {
	ms := p.members
	if len(ms.dormant) > 0 {
		m := ms.dormant[0]
		if err := p.setDormant(ctx, m, false); err != nil {
			return ctrl.Result{}, err
		}
		p.event(corev1.EventTypeNormal, "MemberResumed", "Resumed dormant member %s", m.Name)
		return ctrl.Result{RequeueAfter: requeueMembers}, nil
	}
	if !ms.allReady() {
		return ctrl.Result{RequeueAfter: requeueMembers}, nil
	}
	if !p.etcd.ok {
		return ctrl.Result{RequeueAfter: requeueUnreachable}, nil
	}
	if res, done, err := p.promoteLearner(ctx); done {
		return res, err
	}
	fresh, err := p.fresh(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(fresh.active) != len(ms.active) || len(fresh.deleting) > 0 || fresh.pending() != nil {
		return ctrl.Result{RequeueAfter: requeueStale}, nil
	}
	m, err := p.createMember(ctx, false, nil)
	if err != nil {
		return ctrl.Result{}, err
	}
	p.event(corev1.EventTypeNormal, "ScalingUp", "Scaling up from %d to %d members: created member %s",
		len(ms.running), p.ec.Status.Observed.Replicas, m.Name)
	return p.completePending(ctx, m)
}

// promoteReady promotes a learner of a converged cluster once every member
// is Ready (a learner added by the previous step). done reports that a
// learner exists, so nothing else may change in this pass.
func (p *pass) promoteReady(ctx context.Context) (ctrl.Result, bool, error) {
	if !p.etcd.ok || !p.members.allReady() {
		return ctrl.Result{}, false, nil
	}
	return p.promoteLearner(ctx)
}

// promoteLearner promotes etcd's first learner if its member is Ready.
// done reports that a learner exists, so no other membership change may
// happen in this pass.
func (p *pass) promoteLearner(ctx context.Context) (res ctrl.Result, done bool, err error) {
	for i := range p.etcd.members {
		e := &p.etcd.members[i]
		if !e.IsLearner {
			continue
		}
		m := p.members.byPeer(*e)
		if m == nil || m.DeletionTimestamp != nil || m.Spec.Dormant || !isReady(m) {
			// Not started yet, or going away (its finalizer removes it).
			return ctrl.Result{RequeueAfter: requeueMembers}, true, nil
		}
		t, err := p.target(ctx, m.Name)
		if err != nil {
			return ctrl.Result{}, true, err
		}
		err = p.cl.Etcd.Promote(ctx, t, e.ID)
		switch {
		case err == nil, errors.Is(err, rpctypes.ErrMemberNotLearner):
		case retryablePromote(err):
			// A learner catches up for a few seconds after it starts, and
			// a fresh cluster reports itself unhealthy for ~5s.
			log.FromContext(ctx).V(1).Info("learner not ready for promotion yet", "member", m.Name, "error", err.Error())
			return ctrl.Result{RequeueAfter: requeueEtcd}, true, nil
		default:
			p.event(corev1.EventTypeWarning, "PromoteFailed", "Promoting member %s failed: %v", m.Name, err)
			return ctrl.Result{}, true, err
		}
		e.IsLearner = false
		p.event(corev1.EventTypeNormal, "MemberPromoted", "Promoted member %s (%s) to voter", m.Name, formatID(e.ID))
		return ctrl.Result{RequeueAfter: requeueEtcd}, true, setVoter(ctx, p.cl.Client, m, true)
	}
	return ctrl.Result{}, false, nil
}

// isUnhealthy reports etcd's refusal of a membership change while a voter
// has not been connected to the leader for its HealthInterval.
func isUnhealthy(err error) bool {
	return errors.Is(err, rpctypes.ErrUnhealthy) || strings.Contains(err.Error(), rpctypes.ErrUnhealthy.Error())
}

// retryablePromote reports the errors etcd returns while a learner is not
// promotable yet.
func retryablePromote(err error) bool {
	for _, e := range []error{rpctypes.ErrMemberLearnerNotReady, rpctypes.ErrUnhealthy,
		rpctypes.ErrLeaderChanged, rpctypes.ErrTimeout} {
		if errors.Is(err, e) || strings.Contains(err.Error(), e.Error()) {
			return true
		}
	}
	return errors.Is(err, context.DeadlineExceeded)
}

// scaleDown removes the newest running member by deleting its EtcdMember;
// the member's finalizer removes it from etcd. The last member of a
// cluster scaled to 0 goes dormant instead and keeps its data.
func (p *pass) scaleDown(ctx context.Context) (ctrl.Result, error) {
	ms, desired := p.members, p.ec.Status.Observed.Replicas
	if p.cl.IsPaused() {
		log.FromContext(ctx).Info("scale-down held: destructive actions are paused in this cluster")
		return ctrl.Result{RequeueAfter: requeueMembers}, nil
	}
	if desired == 0 && len(ms.running) == 1 {
		m := ms.running[0]
		if err := p.setDormant(ctx, m, true); err != nil {
			return ctrl.Result{}, err
		}
		p.event(corev1.EventTypeNormal, "MemberDormant", "Scaled to 0: member %s is dormant and keeps its data", m.Name)
		return ctrl.Result{}, nil
	}
	if !p.etcd.ok {
		return ctrl.Result{RequeueAfter: requeueUnreachable}, nil
	}
	victim := newest(ms.running)
	if !removalKeepsQuorum(p.etcd.voters(), p.readyVoters(), p.isVoter(victim), isReady(victim)) {
		log.FromContext(ctx).Info("scale-down held: removing the newest member would lose quorum", "member", victim.Name)
		return ctrl.Result{RequeueAfter: requeueMembers}, nil
	}
	fresh, err := p.fresh(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(fresh.deleting) > 0 || len(fresh.running) != len(ms.running) || newest(fresh.running).UID != victim.UID {
		return ctrl.Result{RequeueAfter: requeueStale}, nil
	}
	if err := p.cl.Client.Delete(ctx, victim, client.Preconditions{UID: &victim.UID}); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	p.event(corev1.EventTypeNormal, "ScalingDown", "Scaling down from %d to %d members: deleting the newest member %s",
		len(ms.running), desired, victim.Name)
	return ctrl.Result{RequeueAfter: requeueEtcd}, nil
}

// readyVoters counts the running members that are Ready and vote.
func (p *pass) readyVoters() int32 {
	return p.countReadyVoters(func(*v1alpha1.EtcdMember) bool { return true })
}

// countReadyVoters counts the running members that are Ready, vote, and
// that keep accepts.
func (p *pass) countReadyVoters(keep func(*v1alpha1.EtcdMember) bool) int32 {
	n := int32(0)
	for _, m := range p.members.running {
		if isReady(m) && p.isVoter(m) && keep(m) {
			n++
		}
	}
	return n
}
