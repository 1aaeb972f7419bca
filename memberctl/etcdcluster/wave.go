package etcdcluster

import (
	"context"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

// The fleet's rollout wave. A roll asks workload.Cluster.Rollouts for its
// place before its first step and at every step after (which renews the
// place and reports the members on target, the progress the wave times);
// it gives the place back once the cluster runs its spec and is whole
// again. InRollout records the place in the EtcdCluster's status, so a
// restarted manager lets a half-done roll finish instead of queueing it
// behind clusters that have not started.

func (p *pass) inWave() bool {
	return apimeta.IsStatusConditionTrue(p.ec.Status.Conditions, v1alpha1.ConditionInRollout)
}

func (p *pass) waveRoll(plan rollPlan, started bool) gate.Roll {
	return gate.Roll{Cluster: p.cl.Name, Namespace: p.ec.Namespace, EtcdCluster: p.ec.Name,
		Done: plan.onTarget, Total: plan.total, Started: started}
}

// joinWave asks for (or renews) the roll's place; false: wait res.
func (p *pass) joinWave(ctx context.Context, plan rollPlan, started bool) (ctrl.Result, bool) {
	d := p.cl.RolloutsOrAllowAll().Join(ctx, p.waveRoll(plan, started))
	if d.Delay > 0 {
		p.rollNote = "waiting: " + d.Reason
		p.setCondition(v1alpha1.ConditionInRollout, metav1.ConditionFalse, v1alpha1.ReasonWaitingForPlace, d.Reason)
		return ctrl.Result{RequeueAfter: d.Delay}, false
	}
	p.setCondition(v1alpha1.ConditionInRollout, metav1.ConditionTrue, v1alpha1.ReasonPlaceHeld,
		"the roll holds a place in the fleet's rollout and goes on one member at a time")
	return ctrl.Result{}, true
}

// endOfWave runs when no member is left to change: while the last one
// restarts the place is renewed; once the cluster is whole it is given
// back. A wait that no longer has a roll to wait for is forgotten too
// (spec.version reverted before the roll started).
func (p *pass) endOfWave(ctx context.Context, plan rollPlan) {
	c := apimeta.FindStatusCondition(p.ec.Status.Conditions, v1alpha1.ConditionInRollout)
	if c == nil {
		return
	}
	if c.Status == metav1.ConditionTrue && (plan.inFlight != nil || !p.complete()) && !p.cl.IsPaused() {
		p.joinWave(ctx, plan, true)
		return
	}
	p.leaveWave()
}

// leaveWave gives the place (or the wait) back.
func (p *pass) leaveWave() {
	p.cl.RolloutsOrAllowAll().Leave(gate.Roll{Cluster: p.cl.Name, Namespace: p.ec.Namespace, EtcdCluster: p.ec.Name})
	apimeta.RemoveStatusCondition(&p.ec.Status.Conditions, v1alpha1.ConditionInRollout)
}
