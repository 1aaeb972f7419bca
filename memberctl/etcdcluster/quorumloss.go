package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdbackup"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

// Recovery from a survivor after a lost majority (opt-in: spec.recovery
// .quorumLoss FromSurvivor, or the one-shot annotation). The steps, each
// pass resuming from what the API holds:
//
//  1. chooseSurvivor (survivor.go) picks the survivor or refuses;
//  2. an EtcdSnapshot of that member alone (spec.memberName) is taken to
//     spec.backup.location (nothing is removed before it is Complete);
//  3. the shared gate is asked (action SurvivorRecovery), and the decision
//     is written to status.recovery exactly as a restore after total loss
//     (decideRecovery), with fromSurvivor set: from then on the old
//     members, the survivor with them, are removed, a seed restored from
//     the survivor's snapshot forms a new cluster, and the normal
//     scale-up adds the others back one at a time as learners and
//     promotes them.

// requeueSurvivorSnapshot: how often the survivor's snapshot is looked at
// while it runs; a snapshot Job takes seconds.
const requeueSurvivorSnapshot = 5 * requeueStale

// onMajorityLoss acts on a lost majority when a recovery from a survivor
// is asked for; done is true while it runs (no membership step then).
func (p *pass) onMajorityLoss(ctx context.Context) (ctrl.Result, bool, error) {
	requested := p.ec.Annotations[v1alpha1.AnnotationRecoverFromSurvivor]
	if requested == p.ec.Status.RecoverFromSurvivorHandled {
		requested = "" // spent on an earlier recovery
	}
	if !p.ec.Spec.Recovery.RecoversFromSurvivor() && requested == "" {
		p.clearQuorumRecovery()
		return ctrl.Result{}, false, nil
	}
	d := chooseSurvivor(requested, p.majority.reports, p.ec.Spec.Backup != nil)
	if d.refused != "" {
		p.refuseSurvivorRecovery(d.refused)
		return ctrl.Result{RequeueAfter: requeueUnreachable}, false, nil
	}
	var survivor *v1alpha1.EtcdMember
	for _, m := range p.majority.survivors {
		if m.Name == d.survivor.name {
			survivor = m
		}
	}
	snap, err := p.survivorSnapshot(ctx, survivor)
	if err != nil {
		return ctrl.Result{}, true, err
	}
	who := describeSurvivor(d.survivor)
	switch {
	case snap.Status.Phase == v1alpha1.SnapshotFailed:
		p.refuseSurvivorRecovery(fmt.Sprintf("the snapshot of survivor %s, EtcdSnapshot %s, failed (%s); nothing was "+
			"removed. Delete it to try again", who, snap.Name, snapshotWhy(snap)))
		return ctrl.Result{RequeueAfter: requeueUnreachable}, false, nil
	case snap.Status.Phase != v1alpha1.SnapshotComplete || snap.Status.Artifact == nil:
		p.recoveringFromSurvivor(fmt.Sprintf("taking a snapshot of survivor %s as EtcdSnapshot %s; nothing is removed before it is Complete", who, snap.Name))
		return ctrl.Result{RequeueAfter: requeueSurvivorSnapshot}, true, nil
	case snap.Status.Artifact.Revision < d.survivor.status.Revision:
		// Not this incident's copy: the member's data moved on since.
		p.refuseSurvivorRecovery(fmt.Sprintf("EtcdSnapshot %s holds revision %d, older than survivor %s: it is not a copy "+
			"of the survivor's data now. Delete it to take a new one", snap.Name, snap.Status.Artifact.Revision, who))
		return ctrl.Result{RequeueAfter: requeueUnreachable}, false, nil
	}
	return p.decideFromSurvivor(ctx, snap, survivor, who, requested)
}

// decideFromSurvivor asks the gate, then writes the decision to restore
// the survivor's stored snapshot, spending the annotation's ask with it.
func (p *pass) decideFromSurvivor(ctx context.Context, snap *v1alpha1.EtcdSnapshot, survivor *v1alpha1.EtcdMember,
	who, requested string) (ctrl.Result, bool, error) {
	if p.cl.IsPaused() {
		p.recoveringFromSurvivor("the survivor's snapshot is stored; the recovery waits: destructive actions are paused for this workload cluster")
		return ctrl.Result{RequeueAfter: requeueMembers}, true, nil
	}
	var g gate.Gate = gate.AllowAll{}
	if p.cl.Gate != nil {
		g = p.cl.Gate
	}
	grant := g.Reserve(ctx, gate.Request{Cluster: p.cl.Name, Namespace: p.ec.Namespace, EtcdCluster: p.ec.Name,
		Member: survivor.Name, Action: gate.SurvivorRecovery, QuorumLost: true})
	if grant.Delay > 0 {
		p.recoveringFromSurvivor("the survivor's snapshot is stored; waiting for the shared replacement rate limiter")
		return ctrl.Result{RequeueAfter: grant.Delay}, true, nil
	}
	prev := p.ec.Status.ClusterID
	if requested != "" {
		// Written with the decision: the ask is spent with it.
		p.ec.Status.RecoverFromSurvivorHandled = requested
	}
	r, err := p.decideRecovery(ctx, snap, survivor.Name)
	if err != nil {
		grant.Cancel()
		return ctrl.Result{}, true, err
	}
	p.event(corev1.EventTypeWarning, v1alpha1.ReasonRecoveringFromSurvivor,
		"etcd cluster %s lost a majority for good (%s); recovering from survivor %s: restoring %s as a new cluster, "+
			"then adding the other members back one at a time. %s", prev, p.majorityLost, who, describeSource(r), describeLoss(r))
	return ctrl.Result{RequeueAfter: requeueStale}, true, nil
}

// survivorSnapshotName is the EtcdSnapshot of a survivor: derived from
// the member, so that a pass that does not see it in its cache yet finds
// it exists rather than taking a second one. Member names are never
// reused, and a recovery removes the survivor, so one name serves one
// incident.
func survivorSnapshotName(m *v1alpha1.EtcdMember) string {
	if n := m.Name + "-survivor"; len(n) <= 52 { // the EtcdSnapshot name limit
		return n
	}
	return "survivor-" + string(m.UID)
}

// survivorSnapshot returns the survivor's EtcdSnapshot, creating it (to
// spec.backup.location, owned by the cluster, kept when deleted: it may
// be the only copy of the data) when there is none. It is read live.
func (p *pass) survivorSnapshot(ctx context.Context, m *v1alpha1.EtcdMember) (*v1alpha1.EtcdSnapshot, error) {
	s := &v1alpha1.EtcdSnapshot{}
	key := types.NamespacedName{Namespace: p.ec.Namespace, Name: survivorSnapshotName(m)}
	err := p.cl.Reader.Get(ctx, key, s)
	if err == nil || !apierrors.IsNotFound(err) {
		return s, err
	}
	s, err = etcdbackup.NewSnapshot(p.ec, key.Name, p.cl.Client.Scheme())
	if err != nil {
		return nil, err
	}
	// Kept when deleted: it may be the only copy of the data.
	s.Spec.DeletionPolicy, s.Finalizers, s.Spec.MemberName = v1alpha1.DeletionRetain, nil, m.Name
	if err := p.cl.Client.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create the snapshot of survivor %s: %w", m.Name, err)
	}
	return s, nil
}

// snapshotWhy is a failed snapshot's Ready message.
func snapshotWhy(s *v1alpha1.EtcdSnapshot) string {
	if c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		return c.Message
	}
	return "no reason recorded"
}

// refuseSurvivorRecovery sets QuorumRecovery=False with the reason, and a
// Warning Event when the message is new.
func (p *pass) refuseSurvivorRecovery(msg string) {
	p.quorumRecovery(metav1.ConditionFalse, v1alpha1.ReasonSurvivorRecoveryRefused, msg)
}

func (p *pass) recoveringFromSurvivor(msg string) {
	p.quorumRecovery(metav1.ConditionTrue, v1alpha1.ReasonRecoveringFromSurvivor, msg)
}

func (p *pass) quorumRecovery(status metav1.ConditionStatus, reason, msg string) {
	prev := apimeta.FindStatusCondition(p.ec.Status.Conditions, v1alpha1.ConditionQuorumRecovery)
	if prev == nil || prev.Reason != reason || prev.Message != msg {
		p.event(corev1.EventTypeWarning, reason, "%s", msg)
	}
	p.setCondition(v1alpha1.ConditionQuorumRecovery, status, reason, msg)
}

// clearQuorumRecovery drops QuorumRecovery once no lost majority is being
// recovered (the outcome of a recovery is in status.recovery and its Event).
func (p *pass) clearQuorumRecovery() {
	c := apimeta.FindStatusCondition(p.ec.Status.Conditions, v1alpha1.ConditionQuorumRecovery)
	if c != nil && c.Reason != v1alpha1.ReasonRecoveredFromSurvivor {
		apimeta.RemoveStatusCondition(&p.ec.Status.Conditions, v1alpha1.ConditionQuorumRecovery)
	}
}
