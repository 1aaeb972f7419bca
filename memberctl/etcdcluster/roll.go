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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component/pod"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

// Rolls. When spec.version is a change etcd allows from what runs
// (versions.go), or the Pod template changed (resources, affinity,
// topologySpreadConstraints, options; template.go), a converged cluster
// rolls its members onto the spec one at a time: this reconciler changes
// one member's spec, and the member reconciler restarts that member (a PVC
// member on its claim with its ID, a memory member as a new member)
// through the shared gate. The next member is changed only once that one
// runs its new spec, as etcd itself reports the version and the Pod's
// template hash says the template, and every member is Ready again.
// Followers go first; the leader goes last, after leadership was moved to
// a member that already runs the new spec, so the cluster is leaderless
// for no more than one election and never loses the leader to a Pod
// deletion.

// rollPlan is where a roll stands.
type rollPlan struct {
	target rollTarget
	total  int
	// onTarget counts running members that run the target.
	onTarget int
	// inFlight is a member already changed to the target that does not run
	// it yet (restarting, or not read since).
	inFlight *v1alpha1.EtcdMember
	// behind are the members still to change, oldest first.
	behind []*v1alpha1.EtcdMember
	// unreported is a member whose Pod's template is not known yet.
	unreported *v1alpha1.EtcdMember
	// version and template: what the roll changes (for its messages).
	version, template bool
}

// planRoll compares the running members with the target.
func planRoll(running []*v1alpha1.EtcdMember, t rollTarget) rollPlan {
	r := rollPlan{target: t, total: len(running)}
	for _, m := range running {
		switch {
		case t.behind(m):
			r.behind = append(r.behind, m)
		case runsSpec(m):
			r.onTarget++
		case r.inFlight == nil:
			r.inFlight = m
		}
		if t.version != "" && (m.Spec.Version != t.version || (m.Status.Version != "" && m.Status.Version != t.version)) {
			r.version = true
		}
		if oldTemplate(m, &t.template) {
			r.template = true
		}
		if m.Status.TemplateHash == "" && r.unreported == nil {
			r.unreported = m
		}
	}
	return r
}

// rolling reports a roll under way: members still to change, or (once a
// roll was seen under way) the last one changed not yet running its spec.
// A member that has not reported its version yet is no roll by itself.
func (r rollPlan) rolling(wasRolling bool) bool {
	return len(r.behind) > 0 || (r.inFlight != nil && wasRolling)
}

// onWhat names the target: "etcd 3.7.3", "the current Pod template", or both.
func (r rollPlan) onWhat() string {
	switch {
	case r.version && r.template:
		return "etcd " + r.target.version + " and the current Pod template"
	case r.version || (r.target.version != "" && !r.template):
		return "etcd " + r.target.version
	}
	return "the current Pod template"
}

func (r rollPlan) progress() string {
	return fmt.Sprintf("%d/%d members on %s", r.onTarget, r.total, r.onWhat())
}

// reason is the Progressing reason of the roll: Upgrading when it changes
// the version, Rolling when only the template.
func (r rollPlan) reason() string {
	if r.version || (r.target.version != "" && !r.template) {
		return v1alpha1.ReasonUpgrading
	}
	return v1alpha1.ReasonRolling
}

// rollTarget is what members are rolled onto, or false when nothing is
// rolled: no latched spec or no cluster yet. While spec.version is a
// change etcd refuses, the members keep theirs (UpgradeBlocked says why)
// and only a template change is rolled.
func (p *pass) rollTarget() (rollTarget, bool) {
	o := p.ec.Status.Observed
	tmpl, ok := p.template()
	if !ok || p.ec.Status.ClusterID == "" {
		return rollTarget{}, false
	}
	t := rollTarget{version: o.Version, template: tmpl}
	if p.versions.blocked() {
		t.version = ""
	}
	return t, true
}

// roll takes one roll step on a converged cluster; p.rollNote says what it
// did or waits for, for the Progressing condition.
func (p *pass) roll(ctx context.Context) (ctrl.Result, error) {
	target, ok := p.rollTarget()
	if !ok {
		return ctrl.Result{}, nil
	}
	plan := planRoll(p.members.running, target)
	p.settleDowngrade(ctx, target.version)
	if len(plan.behind) == 0 {
		p.endOfWave(ctx, plan)
		return ctrl.Result{}, nil
	}
	// A roll that holds its place renews it (and reports its progress)
	// even while it waits below; one that has none asks only once nothing
	// else holds it, so it never takes a place it cannot use.
	inWave := p.inWave()
	if inWave && !p.cl.IsPaused() {
		if res, ok := p.joinWave(ctx, plan, true); !ok {
			return res, nil
		}
	}
	if why, after := p.rollHeld(plan); why != "" {
		p.rollNote = why
		return ctrl.Result{RequeueAfter: after}, nil
	}
	if !inWave {
		if res, ok := p.joinWave(ctx, plan, false); !ok {
			return res, nil
		}
	}
	if ok, res, err := p.preRollSnapshot(ctx, plan); !ok || err != nil {
		return res, err
	}
	if ok, res := p.downgradeReady(ctx, target.version); !ok {
		return res, nil
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
			return p.moveLeader(ctx, leader, to, plan)
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
	case plan.unreported != nil:
		// Re-templating it first would let its Pod, if it predates template
		// hashes, be recorded as running the new template.
		return "waiting for member " + plan.unreported.Name + " to report the template of its Pod", requeueMembers
	case plan.inFlight != nil:
		return fmt.Sprintf("waiting for member %s to run %s", plan.inFlight.Name, plan.onWhat()), requeueMembers
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
// the target, or nil (a single-member cluster has none: its leader restarts
// with leadership, which it regains alone).
func (p *pass) transferee(plan rollPlan, leader *v1alpha1.EtcdMember) *v1alpha1.EtcdMember {
	for _, m := range p.members.running {
		if m.UID != leader.UID && !plan.target.behind(m) && runsSpec(m) &&
			isReady(m) && p.isVoter(m) && m.Status.MemberID != "" {
			return m
		}
	}
	return nil
}

// moveLeader hands leadership from the leader to a member on the target;
// the next pass finds the old leader a follower and rolls it.
func (p *pass) moveLeader(ctx context.Context, leader, to *v1alpha1.EtcdMember, plan rollPlan) (ctrl.Result, error) {
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
	p.rollNote = fmt.Sprintf("moved leadership from %s to %s, which runs %s", leader.Name, to.Name, plan.onWhat())
	p.event(corev1.EventTypeNormal, "LeaderMoved", "Moved etcd leadership from member %s to %s before rolling %s", leader.Name, to.Name, leader.Name)
	return ctrl.Result{RequeueAfter: requeueEtcd}, nil
}

// rollMember changes one member's spec to the target; its reconciler
// restarts it.
func (p *pass) rollMember(ctx context.Context, m *v1alpha1.EtcdMember, isLeader bool, plan rollPlan) (ctrl.Result, error) {
	from := m.Status.Version
	if from == "" {
		from = m.Spec.Version
	}
	fields := templateDiff(&m.Spec, &plan.target.template)
	patch := client.MergeFromWithOptions(m.DeepCopy(), client.MergeFromWithOptimisticLock{})
	plan.target.retemplate(&m.Spec)
	if err := p.cl.Client.Patch(ctx, m, patch); err != nil {
		return ctrl.Result{}, fmt.Errorf("roll member %s onto %s: %w", m.Name, plan.onWhat(), err)
	}
	role := "follower"
	if isLeader {
		role = "leader"
	}
	var change []string
	if m.Spec.Version != from {
		change = append(change, fmt.Sprintf("from etcd %s to %s", from, m.Spec.Version))
	}
	if len(fields) > 0 {
		change = append(change, "onto the new Pod template ("+strings.Join(fields, ", ")+")")
	}
	p.rollNote = fmt.Sprintf("rolling %s %s %s", role, m.Name, strings.Join(change, " and "))
	if len(change) == 1 && m.Spec.Version != from {
		p.rollNote = fmt.Sprintf("rolling %s %s from etcd %s", role, m.Name, from)
	}
	p.event(corev1.EventTypeNormal, "RollingMember", "Rolling %s %s %s: %s",
		role, m.Name, strings.Join(change, " and "), plan.progress())
	return ctrl.Result{RequeueAfter: requeueMembers}, nil
}

// setRollStatus reports a roll under way on a cluster the lock left
// Reconciled (or Upgrading, while a member restarts): Progressing=True,
// Upgrading, with the progress and what the roll does or waits for. The
// note is a stable string, so a waiting roll writes nothing new. The end
// of a roll is marked by an Upgraded Event.
func (p *pass) setRollStatus() {
	target, ok := p.rollTarget()
	c := apimeta.FindStatusCondition(p.ec.Status.Conditions, v1alpha1.ConditionProgressing)
	prev := apimeta.FindStatusCondition(p.orig.Status.Conditions, v1alpha1.ConditionProgressing)
	wasRolling := prev != nil && isRollReason(prev.Reason)
	if p.terminal != "" || c == nil || (c.Reason != v1alpha1.ReasonReconciled && !isRollReason(c.Reason)) {
		return
	}
	plan := planRoll(p.members.running, target)
	if o := p.ec.Status.Observed; o != nil && int(o.Replicas) > plan.total {
		plan.total = int(o.Replicas) // a memory member rolled is gone until its successor is added
	}
	reason := plan.reason()
	if wasRolling && !plan.version && !plan.template {
		// The last member restarts: the roll keeps its kind, and its
		// progress its words, to the end.
		reason = prev.Reason
		plan.version, plan.template = reason == v1alpha1.ReasonUpgrading, reason == v1alpha1.ReasonRolling
	}
	if wasRolling && ok && !plan.rolling(wasRolling) && !p.complete() {
		// The last member rolled is being replaced (memory) or restarted:
		// the roll is over only once the cluster is whole again.
		p.setCondition(v1alpha1.ConditionProgressing, metav1.ConditionTrue, reason,
			plan.progress()+"; waiting for the cluster to be whole and Ready again")
		return
	}
	if !ok || !plan.rolling(wasRolling) {
		if isRollReason(c.Reason) {
			// Carried by the lock while a member restarted; nothing rolls now.
			p.setCondition(v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonReconciled, p.reconciledMessage())
		}
		switch {
		case !wasRolling || !ok:
		case prev.Reason == v1alpha1.ReasonUpgrading:
			if p.versions.blocked() {
				break // spec.version changed mid-roll to a refused one: no upgrade to announce
			}
			p.event(corev1.EventTypeNormal, "Upgraded", "Every member runs etcd %s", p.ec.Status.Observed.Version)
		default:
			p.event(corev1.EventTypeNormal, "Rolled", "Every member runs the spec's Pod template (%s)", pod.TemplateHash(&target.template))
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
	p.setCondition(v1alpha1.ConditionProgressing, metav1.ConditionTrue, reason, plan.progress()+"; "+note)
}

// isRollReason: a Progressing reason of a roll under way.
func isRollReason(r string) bool {
	return r == v1alpha1.ReasonUpgrading || r == v1alpha1.ReasonRolling
}

func parseID(s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("member ID %q: %w", s, err)
	}
	return id, nil
}
