package etcdcluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

// Rolling version changes. When spec.version is a change etcd allows from
// what runs (versions.go), a converged cluster rolls its members to it one
// at a time: this reconciler changes one member's spec.version, and the
// member reconciler restarts that member (a PVC member on its claim with
// its ID, a memory member as a new member) through the shared gate. The
// next member is changed only once that one runs the new version, as etcd
// itself reports it, and every member is Ready again. Followers go first;
// the leader goes last, after leadership was moved to a member that
// already runs the new version, so the cluster is leaderless for no more
// than one election and never loses the leader to a Pod deletion.

// rollPlan is where a roll stands.
type rollPlan struct {
	target string
	total  int
	// onTarget counts running members that report target.
	onTarget int
	// inFlight is a member already changed to target that does not report
	// it yet (restarting, or not read since).
	inFlight *v1alpha1.EtcdMember
	// behind are the members still to change, oldest first.
	behind []*v1alpha1.EtcdMember
}

// planRoll compares the running members with target.
func planRoll(running []*v1alpha1.EtcdMember, target string) rollPlan {
	r := rollPlan{target: target, total: len(running)}
	for _, m := range running {
		switch {
		case m.Spec.Version != target:
			r.behind = append(r.behind, m)
		case m.Status.Version == target:
			r.onTarget++
		case r.inFlight == nil:
			r.inFlight = m
		}
	}
	return r
}

// rolling reports a roll under way: members still to change, or (once a
// roll was seen under way) the last one changed not yet running target. A
// member that has not reported its version yet is no roll by itself.
func (r rollPlan) rolling(wasRolling bool) bool {
	return len(r.behind) > 0 || (r.inFlight != nil && wasRolling)
}

func (r rollPlan) progress() string {
	return fmt.Sprintf("%d/%d members on etcd %s", r.onTarget, r.total, r.target)
}

// rollTarget is the version members are rolled to, or "" when nothing is
// rolled: no latched spec, or spec.version a change etcd refuses (the
// members then keep theirs, UpgradeBlocked says why).
func (p *pass) rollTarget() string {
	o := p.ec.Status.Observed
	if o == nil || p.ec.Status.ClusterID == "" || p.versions.blocked() {
		return ""
	}
	return o.Version
}

// roll takes one roll step on a converged cluster; p.rollNote says what it
// did or waits for, for the Progressing condition.
func (p *pass) roll(ctx context.Context) (ctrl.Result, error) {
	target := p.rollTarget()
	if target == "" {
		return ctrl.Result{}, nil
	}
	plan := planRoll(p.members.running, target)
	if len(plan.behind) == 0 {
		return ctrl.Result{}, nil
	}
	if why, after := p.rollHeld(plan); why != "" {
		p.rollNote = why
		return ctrl.Result{RequeueAfter: after}, nil
	}
	leader, err := p.leader(ctx)
	if err != nil {
		p.rollNote = "held: cannot tell which member leads: " + err.Error()
		return ctrl.Result{RequeueAfter: requeueEtcd}, nil
	}
	victim := firstNot(plan.behind, leader)
	if victim == nil {
		// Only the leader is left: hand leadership to a member on target.
		victim = leader
		if to := p.transferee(plan, leader); to != nil {
			return p.moveLeader(ctx, leader, to)
		}
	}
	return p.rollMember(ctx, victim, victim == leader, plan)
}

// rollHeld says why no member may be rolled now, and when to look again.
func (p *pass) rollHeld(plan rollPlan) (string, time.Duration) {
	ms := p.members
	switch {
	case p.cl.IsPaused():
		return "held: destructive actions are paused in this cluster", requeueMembers
	case !p.etcd.ok:
		return "held: etcd did not answer", requeueUnreachable
	case !ms.allReady():
		return "waiting for every member to be Ready", requeueMembers
	case p.ec.Status.Replacing != nil:
		return "held: member " + p.ec.Status.Replacing.Member + " is being replaced", requeueMembers
	case plan.inFlight != nil:
		return fmt.Sprintf("waiting for member %s to run etcd %s", plan.inFlight.Name, plan.target), requeueMembers
	case plan.behind[0].Spec.Storage.Medium == v1alpha1.StorageMediumMemory &&
		!removalKeepsQuorum(p.etcd.voters(), p.readyVoters(), true, true):
		return "held: a memory-backed member is replaced with a new ID, which only a cluster that keeps quorum without it can do", requeueMembers
	}
	return "", 0
}

// leader asks the running members, one at a time, who leads, and returns
// that member.
func (p *pass) leader(ctx context.Context) (*v1alpha1.EtcdMember, error) {
	t, err := p.target(ctx, "")
	if err != nil {
		return nil, err
	}
	var errs []string
	for _, m := range p.members.running {
		st, err := p.cl.Etcd.Status(ctx, t, etcd.MemberClientURL(m))
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if st.Leader == 0 {
			errs = append(errs, m.Name+" knows no leader")
			continue
		}
		for _, l := range p.members.running {
			if l.Status.MemberID == formatID(st.Leader) {
				return l, nil
			}
		}
		return nil, fmt.Errorf("the leader %s is no running member", formatID(st.Leader))
	}
	return nil, fmt.Errorf("no member answered: %s", strings.Join(errs, "; "))
}

// firstNot returns the first member that is not skip.
func firstNot(ms []*v1alpha1.EtcdMember, skip *v1alpha1.EtcdMember) *v1alpha1.EtcdMember {
	for _, m := range ms {
		if m.UID != skip.UID {
			return m
		}
	}
	return nil
}

// transferee is the oldest Ready voter other than the leader that runs
// target, or nil (a single-member cluster has none: its leader restarts
// with leadership, which it regains alone).
func (p *pass) transferee(plan rollPlan, leader *v1alpha1.EtcdMember) *v1alpha1.EtcdMember {
	for _, m := range p.members.running {
		if m.UID != leader.UID && m.Status.Version == plan.target && m.Spec.Version == plan.target &&
			isReady(m) && p.isVoter(m) && m.Status.MemberID != "" {
			return m
		}
	}
	return nil
}

// moveLeader hands leadership from the leader to a member on the target
// version; the next pass finds the old leader a follower and rolls it.
func (p *pass) moveLeader(ctx context.Context, leader, to *v1alpha1.EtcdMember) (ctrl.Result, error) {
	t, err := p.target(ctx, "")
	if err != nil {
		return ctrl.Result{}, err
	}
	id, err := parseID(to.Status.MemberID)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := p.cl.Etcd.MoveLeader(ctx, t, etcd.MemberClientURL(leader), id); err != nil {
		log.FromContext(ctx).Info("moving leadership failed; retrying", "from", leader.Name, "to", to.Name, "error", err.Error())
		p.rollNote = fmt.Sprintf("moving leadership from %s to %s failed, retrying: %v", leader.Name, to.Name, err)
		return ctrl.Result{RequeueAfter: requeueEtcd}, nil
	}
	p.rollNote = fmt.Sprintf("moved leadership from %s to %s, which runs etcd %s", leader.Name, to.Name, to.Status.Version)
	p.event(corev1.EventTypeNormal, "LeaderMoved", "Moved etcd leadership from member %s to %s before rolling %s", leader.Name, to.Name, leader.Name)
	return ctrl.Result{RequeueAfter: requeueEtcd}, nil
}

// rollMember changes one member's spec.version; its reconciler restarts it.
func (p *pass) rollMember(ctx context.Context, m *v1alpha1.EtcdMember, isLeader bool, plan rollPlan) (ctrl.Result, error) {
	from := m.Status.Version
	if from == "" {
		from = m.Spec.Version
	}
	patch := []byte(fmt.Sprintf(`{"spec":{"version":%q}}`, plan.target))
	if err := p.cl.Client.Patch(ctx, m, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return ctrl.Result{}, fmt.Errorf("set version %s on member %s: %w", plan.target, m.Name, err)
	}
	role := "follower"
	if isLeader {
		role = "leader"
	}
	p.rollNote = fmt.Sprintf("rolling %s %s from etcd %s", role, m.Name, from)
	p.event(corev1.EventTypeNormal, "RollingMember", "Rolling %s %s from etcd %s to %s: %s",
		role, m.Name, from, plan.target, plan.progress())
	return ctrl.Result{RequeueAfter: requeueMembers}, nil
}

// setRollStatus reports a roll under way on a cluster the lock left
// Reconciled (or Upgrading, while a member restarts): Progressing=True,
// Upgrading, with the progress and what the roll does or waits for. The
// note is a stable string, so a waiting roll writes nothing new. The end
// of a roll is marked by an Upgraded Event.
func (p *pass) setRollStatus() {
	target := p.rollTarget()
	c := apimeta.FindStatusCondition(p.ec.Status.Conditions, v1alpha1.ConditionProgressing)
	prev := apimeta.FindStatusCondition(p.orig.Status.Conditions, v1alpha1.ConditionProgressing)
	wasRolling := prev != nil && prev.Reason == v1alpha1.ReasonUpgrading
	if p.terminal != "" || c == nil || (c.Reason != v1alpha1.ReasonReconciled && c.Reason != v1alpha1.ReasonUpgrading) {
		return
	}
	plan := planRoll(p.members.running, target)
	if o := p.ec.Status.Observed; o != nil && int(o.Replicas) > plan.total {
		plan.total = int(o.Replicas) // a memory member rolled is gone until its successor is added
	}
	if wasRolling && target != "" && !plan.rolling(wasRolling) && !p.complete() {
		// The last member rolled is being replaced (memory) or restarted:
		// the roll is over only once the cluster is whole again.
		p.setCondition(v1alpha1.ConditionProgressing, metav1.ConditionTrue, v1alpha1.ReasonUpgrading,
			plan.progress()+"; waiting for the cluster to be whole and Ready again")
		return
	}
	if target == "" || !plan.rolling(wasRolling) {
		if c.Reason == v1alpha1.ReasonUpgrading {
			// Carried by the lock while a member restarted; nothing rolls now.
			p.setCondition(v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonReconciled, p.reconciledMessage())
		}
		if wasRolling && target != "" {
			p.event(corev1.EventTypeNormal, "Upgraded", "Every member runs etcd %s", target)
		}
		return
	}
	note := p.rollNote
	if note == "" && wasRolling {
		if i := strings.Index(prev.Message, "; "); i >= 0 {
			note = prev.Message[i+2:]
		}
	}
	if note == "" {
		note = "rolling the members one at a time, followers first, the leader last"
	}
	p.setCondition(v1alpha1.ConditionProgressing, metav1.ConditionTrue, v1alpha1.ReasonUpgrading, plan.progress()+"; "+note)
}

func parseID(s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("member ID %q: %w", s, err)
	}
	return id, nil
}
