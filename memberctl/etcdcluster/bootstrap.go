package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

// bootstrap starts a new etcd cluster from a single seed member: it creates
// the seed when there is none, stamps it a voter and sets its initial
// cluster to itself alone. Every member after it joins as a learner. Each
// write is idempotent, so a crash between them is resumed by the next pass.
func (p *pass) bootstrap(ctx context.Context) (ctrl.Result, error) {
	seed := p.members.seed
	if seed == nil {
		fresh, err := p.fresh(ctx)
		if err != nil {
			return ctrl.Result{}, err
		}
		switch {
		case fresh.seed != nil:
			seed = fresh.seed
		case len(fresh.running) > 0 || len(fresh.deleting) > 0:
			return ctrl.Result{RequeueAfter: requeueStale}, nil
		default:
			restore, ok, err := p.seedRestore(ctx)
			if err != nil || !ok {
				return ctrl.Result{RequeueAfter: requeueRestoreSource}, err
			}
			if p.recordRestoreSource(restore) {
				// The seed comes next pass, once the status is written
				// (its own watch event brings that pass).
				return ctrl.Result{RequeueAfter: requeueRestoreSource}, nil
			}
			if seed, err = p.createMember(ctx, true, restore); err != nil {
				return ctrl.Result{}, err
			}
			p.event(corev1.EventTypeNormal, "MemberCreated", "Created seed member %s to bootstrap the cluster", seed.Name)
		}
	}
	if !seed.Status.IsVoter {
		// A seed is a voter from its first breath; stamping it before
		// MemberList can confirm lets etcd.Select dial it.
		if err := setVoter(ctx, p.cl.Client, seed, true); err != nil {
			return ctrl.Result{}, err
		}
	}
	if seed.Spec.InitialCluster == "" {
		ic := seed.Name + "=" + etcd.MemberPeerURL(seed)
		if err := p.patchInitialCluster(ctx, seed, ic); err != nil {
			return ctrl.Result{}, err
		}
	}
	p.waitingForSeed(seed)
	return ctrl.Result{RequeueAfter: requeueMembers}, nil
}

// awaitSeed reports progress while the seed starts; discovery itself
// happened in probe.
func (p *pass) awaitSeed() ctrl.Result {
	seed := p.members.seed
	if seed == nil {
		// Running members but no seed and no cluster ID: nothing to
		// discover from. The deadline turns this into BootstrapFailed.
		return ctrl.Result{RequeueAfter: requeueMembers}
	}
	p.waitingForSeed(seed)
	if seed.Status.PodName == "" {
		return ctrl.Result{RequeueAfter: requeueMembers}
	}
	return ctrl.Result{RequeueAfter: requeueEtcd}
}

func (p *pass) waitingForSeed(seed *v1alpha1.EtcdMember) {
	p.setCondition(v1alpha1.ConditionProgressing, metav1.ConditionTrue, v1alpha1.ReasonWaitingForSeed,
		fmt.Sprintf("waiting for the seed member %s to start a single-member cluster", seed.Name))
}

// tryLatch latches the cluster ID once the seed reports a cluster of
// exactly one member, itself. Anything else (a seed that joined some other
// cluster, or members added behind our back) is not ours to adopt.
func (p *pass) tryLatch() {
	v, seed := &p.etcd, p.members.seed
	if !v.ok || v.clusterID == 0 || len(v.members) != 1 || seed == nil {
		return
	}
	if _, ok := etcd.FindMember(v.members, seed.Name, etcd.MemberPeerURL(seed)); !ok {
		return
	}
	p.ec.Status.ClusterID = formatID(v.clusterID)
	p.discovered = true
	p.recordRestore(seed)
	if c := apimeta.FindStatusCondition(p.ec.Status.Conditions, v1alpha1.ConditionProgressing); c != nil && c.Reason == v1alpha1.ReasonWaitingForSeed {
		p.setCondition(v1alpha1.ConditionProgressing, metav1.ConditionTrue, v1alpha1.ReasonWaitingForSeed,
			fmt.Sprintf("the seed member %s formed the cluster; growing to %s", seed.Name, p.goal(p.ec.Status.Observed)))
	}
	p.event(corev1.EventTypeNormal, "ClusterIDLatched", "Seed member %s formed etcd cluster %s", seed.Name, p.ec.Status.ClusterID)
}

func formatID(id uint64) string { return fmt.Sprintf("%016x", id) }
