package etcdcluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/datadirguard"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

// Total loss: every member's data is provably gone and no member answers.
// Detection is conservative; every piece of proof is a live read (see
// dataGone), and one member that may still hold data vetoes it. What it
// leads to is recovery.go: with spec.recovery.restoreOnTotalLoss and a
// Complete EtcdSnapshot the cluster is re-bootstrapped from it; otherwise
// the TotalLoss condition and one Warning Event say what a person must do,
// and nothing else changes.

// recover runs before the membership step, which it replaces while it
// reports done (even a terminal step: its cluster is gone). While a restore after total
// loss is under way it removes the lost members (done is true until they
// are gone); otherwise it looks for total loss when etcd did not answer.
func (p *pass) recover(ctx context.Context) (res ctrl.Result, done bool, err error) {
	st := &p.ec.Status
	if st.Recovery != nil && st.Recovery.Phase == v1alpha1.RecoveryRestoring {
		return p.removeLost(ctx)
	}
	if st.ClusterID == "" || !p.etcd.tried || p.etcd.ok {
		p.clearTotalLoss()
		p.clearQuorumRecovery()
		return ctrl.Result{}, false, nil
	}
	lost, why, lostPhase, err := p.totalLoss(ctx)
	if err == nil && !lost && p.majority != nil {
		p.clearTotalLoss()
		return p.onMajorityLoss(ctx)
	}
	if err != nil || !lost {
		if err == nil {
			p.clearTotalLoss()
			p.clearQuorumRecovery()
		}
		return ctrl.Result{}, false, err
	}
	if lostPhase {
		if wait := p.lostClaimsWait(why); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, false, nil
		}
	}
	return p.onTotalLoss(ctx, why)
}

// lostClaimGrace is how long a claim must stay in phase Lost before it
// proves its member's data gone. Lost only says that the claim's volume
// object is missing: a volume restored from a backup of the cluster's
// objects, or re-created by an operator, binds the claim again within
// minutes, and a restore from a snapshot would throw away whatever the
// volumes still hold. An absent claim proves it at once.
const lostClaimGrace = 5 * time.Minute

// lostClaimsWait returns how much longer the total loss that rests on
// claims in phase Lost must last before it counts, and says so in the
// TotalLoss condition (Unknown, ClaimsLostPending), whose
// lastTransitionTime records since when. Zero: it has lasted long enough.
func (p *pass) lostClaimsWait(why string) time.Duration {
	c := apimeta.FindStatusCondition(p.ec.Status.Conditions, v1alpha1.ConditionTotalLoss)
	if c != nil && c.Status == metav1.ConditionTrue {
		// Counted already, and held since (clearTotalLoss drops the
		// condition once it does not): the snapshot check or the limiter
		// that followed must not start the grace period over.
		return 0
	}
	if c == nil || c.Status != metav1.ConditionUnknown || c.Reason != v1alpha1.ReasonClaimsLostPending {
		apimeta.SetStatusCondition(&p.ec.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionTotalLoss,
			Status: metav1.ConditionUnknown, Reason: v1alpha1.ReasonClaimsLostPending, ObservedGeneration: p.ec.Generation,
			LastTransitionTime: metav1.NewTime(p.now),
			Message: fmt.Sprintf("every member's data looks gone (%s); claims in phase Lost count as lost once they have been so for %s",
				why, lostClaimGrace)})
		p.event(corev1.EventTypeWarning, v1alpha1.ReasonClaimsLostPending, "Every member's data of the etcd cluster looks gone (%s); "+
			"claims in phase Lost count as lost after %s, unless they bind again", why, lostClaimGrace)
		return lostClaimGrace
	}
	return c.LastTransitionTime.Add(lostClaimGrace).Sub(p.now)
}

// totalLoss reports whether every member of the cluster (read live, the
// ones being deleted included) has provably lost its data. why is the
// proof, or the member that may still hold data; lostPhase, that some of
// the proof is a claim in phase Lost (lostClaimsWait). When some members
// are provably lost and they are a majority, it records the majority loss
// for the status (majorityLoss).
func (p *pass) totalLoss(ctx context.Context) (lost bool, why string, lostPhase bool, err error) {
	if p.noLossInSight(ctx) {
		return false, "", false, nil
	}
	ms, err := p.fresh(ctx)
	if err != nil {
		return false, "", false, err
	}
	if len(ms.all) == 0 {
		return false, "no member to prove anything of", false, nil
	}
	var (
		proofs, whats []string
		survivors     []*v1alpha1.EtcdMember
	)
	for _, m := range ms.all {
		d, err := dataGone(ctx, p.cl.Reader, m)
		if err != nil {
			return false, "", false, err
		}
		if d.gone {
			lostPhase = lostPhase || d.lostPhase
			proofs = append(proofs, m.Name+" "+d.what)
		} else {
			survivors, whats = append(survivors, m), append(whats, d.what)
		}
	}
	if len(survivors) > 0 {
		p.majorityLoss(ctx, len(ms.all), proofs, survivors, whats)
		return false, fmt.Sprintf("member %s may still hold data: %s", survivors[0].Name, whats[0]), false, nil
	}
	return true, strings.Join(proofs, "; "), lostPhase, nil
}

// noLossInSight spares the live reads of totalLoss when the cache shows
// every member's data where it was and no loss is being counted: the
// common quorum loss, members restarting after a power cycle. Those reads
// (the members, then each member's claim or Pod, one after the other) took
// 1-3 s per reconcile at a fleet heal's load on 2 cores, in every
// reconcile of every cluster without quorum, and the reconcile that sees a
// cluster whole again waited behind them. The live reads prove a loss;
// the cache can only fail to show one yet, and then this cluster, which
// etcd does not answer, is reconciled again (requeueUnreachable) and the
// cache has caught up. Once a loss is counted or recovered from (a
// TotalLoss or QuorumRecovery condition, an Available of MajorityLost),
// every pass reads live, as before, so that a lagging cache never
// restarts a grace period or drops a report.
func (p *pass) noLossInSight(ctx context.Context) bool {
	st := &p.ec.Status
	if apimeta.FindStatusCondition(st.Conditions, v1alpha1.ConditionTotalLoss) != nil ||
		apimeta.FindStatusCondition(st.Conditions, v1alpha1.ConditionQuorumRecovery) != nil {
		return false
	}
	if c := apimeta.FindStatusCondition(st.Conditions, v1alpha1.ConditionAvailable); c != nil && c.Reason == v1alpha1.ReasonMajorityLost {
		return false
	}
	if len(p.members.all) == 0 {
		return false
	}
	for _, m := range p.members.all {
		if d, err := dataGone(ctx, p.cl.Client, m); err != nil || d.gone {
			return false
		}
	}
	return true
}

// dataProof is what dataGone found of one member's data.
type dataProof struct {
	gone bool
	// what is the proof, or why there is none.
	what string
	// lostPhase: the proof is a claim in phase Lost (lostClaimsWait).
	lostPhase bool
}

// dataGone reports whether one member's data is provably gone, from live
// reads of its Pod (memory members) or its claim (PVC members).
//
//   - memory: the Pod is absent (a tmpfs goes with its Pod), or its
//     data-dir guard refused to start etcd because the tmpfs came back
//     empty (DataDirLost). A Pod that exists and whose guard has not
//     refused may still run etcd on its data: no proof, even if it is
//     terminal (the member controller deletes such Pods first).
//   - PVC: the claim is absent, or its phase is Lost, or it is being
//     deleted and no Pod uses it.
//
// r is the live reader for a proof, or the cache for noLossInSight.
func dataGone(ctx context.Context, r client.Reader, m *v1alpha1.EtcdMember) (dataProof, error) {
	key := types.NamespacedName{Namespace: m.Namespace, Name: m.Name}
	if m.Spec.Storage.Medium != v1alpha1.StorageMediumMemory {
		key.Name = etcd.PVCName(m.Name)
		pvc := &corev1.PersistentVolumeClaim{}
		switch err := r.Get(ctx, key, pvc); {
		case apierrors.IsNotFound(err):
			return dataProof{gone: true, what: "lost its claim " + key.Name}, nil
		case err != nil:
			return dataProof{}, err
		case pvc.Status.Phase == corev1.ClaimLost:
			return dataProof{gone: true, what: "has claim " + key.Name + " in phase Lost", lostPhase: true}, nil
		case pvc.DeletionTimestamp != nil:
			// Kept only by pvc-protection while a Pod uses it: with no Pod
			// left, it goes, and its data with it.
			if gone, err := podGone(ctx, r, m); err != nil || gone {
				return dataProof{gone: gone, what: "lost its claim " + key.Name + ", being deleted with no Pod to use it"}, err
			}
		}
		return dataProof{what: "its claim " + key.Name + " exists"}, nil
	}
	pod := &corev1.Pod{}
	switch err := r.Get(ctx, key, pod); {
	case apierrors.IsNotFound(err):
		return dataProof{gone: true, what: "lost its Pod, and its tmpfs with it"}, nil
	case err != nil:
		return dataProof{}, err
	}
	if lost, msg := datadirguard.DataDirLost(pod); lost {
		return dataProof{gone: true, what: "restarted on an empty tmpfs (" + msg + ")"}, nil
	}
	return dataProof{what: fmt.Sprintf("its Pod is %s and its data-dir guard has not refused", pod.Status.Phase)}, nil
}

// podGone reports whether member m's Pod is absent, as r reads it.
func podGone(ctx context.Context, r client.Reader, m *v1alpha1.EtcdMember) (bool, error) {
	err := r.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: m.Name}, &corev1.Pod{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
}

// onTotalLoss reports total loss and, when opted in and a snapshot
// exists, decides the restore: the decision is written to the status
// (with the resourceVersion read, so of two managers one gets a conflict)
// before anything is removed.
func (p *pass) onTotalLoss(ctx context.Context, why string) (ctrl.Result, bool, error) {
	prev := p.ec.Status.ClusterID
	if r := p.ec.Spec.Recovery; r == nil || !r.RestoreOnTotalLoss {
		p.setTotalLoss(v1alpha1.ReasonRestoreNotEnabled, fmt.Sprintf("every member's data is gone (%s) and "+
			"spec.recovery.restoreOnTotalLoss is off: delete and recreate the cluster, restoring it from a snapshot", why))
		return ctrl.Result{}, false, nil
	}
	choice, err := p.verifiedSnapshot(ctx)
	switch {
	case err != nil:
		return ctrl.Result{}, false, err
	case choice.candidates == 0:
		p.setTotalLoss(v1alpha1.ReasonNoSnapshot, fmt.Sprintf("every member's data is gone (%s) and "+
			"no Complete EtcdSnapshot of cluster %s exists to restore from", why, p.ec.Name))
		return ctrl.Result{}, false, nil
	case choice.checking != nil:
		// Nothing is removed before the snapshot is known to be there.
		p.setCondition(v1alpha1.ConditionTotalLoss, metav1.ConditionTrue, v1alpha1.ReasonVerifyingSnapshot,
			fmt.Sprintf("every member's data is gone (%s); checking that EtcdSnapshot %s is still stored as it recorded (%s) before restoring it.%s",
				why, choice.checking.Name, choice.checking.Status.Artifact.URI, describeSkipped(choice.skipped)))
		return ctrl.Result{RequeueAfter: requeueVerify}, true, nil
	case choice.chosen == nil:
		p.setTotalLoss(v1alpha1.ReasonNoVerifiedSnapshot, fmt.Sprintf("every member's data is gone (%s), and none of the %d "+
			"Complete EtcdSnapshots of cluster %s is stored as it recorded, so nothing was restored or removed.%s "+
			"They are checked again in %s; or restore the cluster by hand", why, choice.candidates, p.ec.Name,
			describeSkipped(choice.skipped), verifyFresh))
		return ctrl.Result{RequeueAfter: requeueNoVerified}, false, nil
	}
	snap := choice.chosen
	if p.cl.IsPaused() {
		p.setTotalLoss(v1alpha1.ReasonRestoringAfterTotalLoss, "every member's data is gone; the restore waits: destructive actions are paused for this workload cluster")
		return ctrl.Result{RequeueAfter: requeueMembers}, true, nil
	}
	var g gate.Gate = gate.AllowAll{}
	if p.cl.Gate != nil {
		g = p.cl.Gate
	}
	d := g.Reserve(ctx, gate.Request{Cluster: p.cl.Name, Namespace: p.ec.Namespace, EtcdCluster: p.ec.Name,
		Action: gate.TotalLossRestore, QuorumLost: true})
	if d.Delay > 0 {
		p.setTotalLoss(v1alpha1.ReasonRestoringAfterTotalLoss, "every member's data is gone; waiting for the shared replacement rate limiter to restore")
		return ctrl.Result{RequeueAfter: d.Delay}, true, nil
	}
	r, err := p.decideRecovery(ctx, snap, "")
	if err != nil {
		d.Cancel()
		return ctrl.Result{}, true, err
	}
	p.event(corev1.EventTypeWarning, v1alpha1.ReasonRestoringAfterTotalLoss,
		"Every member's data of etcd cluster %s is gone (%s); restoring %s, its stored copy checked, as a new cluster. %s%s",
		prev, why, describeSource(r), describeLoss(r), describeSkipped(choice.skipped))
	return ctrl.Result{RequeueAfter: requeueStale}, true, nil
}

// decideRecovery writes the restore decision: status.recovery names the
// snapshot and the members to remove, the cluster ID is cleared so that
// the normal bootstrap path runs again, and the token is new so that the
// restored cluster gets a new ID. The write carries the resourceVersion
// read: a conflict (a concurrent member replacement, another manager)
// restores nothing, and the next pass decides again on fresh reads.
//
// fromSurvivor names the survivor whose snapshot snap is, for a recovery
// after a lost majority (quorumloss.go); the survivor is removed with the
// others, its data being in snap.
func (p *pass) decideRecovery(ctx context.Context, snap *v1alpha1.EtcdSnapshot, fromSurvivor string) (*v1alpha1.RecoveryStatus, error) {
	ms, err := p.fresh(ctx)
	if err != nil {
		return nil, err
	}
	st := &p.ec.Status
	r := newRecovery(snap, st, p.now)
	r.FromSurvivor = fromSurvivor
	for _, m := range ms.all {
		r.ReplacedMembers = append(r.ReplacedMembers, v1alpha1.RecoveredMember{Name: m.Name, UID: m.UID})
	}
	st.Recovery = r
	st.ClusterID = ""
	st.ClusterToken = fmt.Sprintf("%s-r%d", clusterToken(p.ec), p.now.Unix())
	st.Replacing = nil
	st.LastObserved = nil // kept in st.Recovery; the new cluster starts lower
	st.ProgressDeadline = progressDeadline(p.ec, p.now)
	if fromSurvivor != "" {
		msg := "removing the members of the lost cluster (survivor " + fromSurvivor + " too), then restoring " + describeSource(r)
		p.setCondition(v1alpha1.ConditionQuorumRecovery, metav1.ConditionTrue, v1alpha1.ReasonRecoveringFromSurvivor, msg)
		p.setCondition(v1alpha1.ConditionProgressing, metav1.ConditionTrue, v1alpha1.ReasonRecoveringFromSurvivor, msg)
	} else {
		p.setTotalLoss(v1alpha1.ReasonRestoringAfterTotalLoss, "restoring "+describeSource(r))
		p.setCondition(v1alpha1.ConditionProgressing, metav1.ConditionTrue, v1alpha1.ReasonRestoringAfterTotalLoss,
			"removing the lost members, then restoring "+describeSource(r))
	}
	if err := p.cl.Client.Status().Update(ctx, p.ec); err != nil {
		return nil, fmt.Errorf("record the restore after total loss: %w", err)
	}
	p.orig = p.ec.DeepCopy()
	return r, nil
}

// removeLost deletes the lost cluster's members (their finalizers skip
// etcd, which is gone) and reports done until none is left; the seed is
// bootstrapped from the snapshot only then, so old and new members never
// run side by side.
func (p *pass) removeLost(ctx context.Context) (ctrl.Result, bool, error) {
	items, err := etcd.Members(ctx, p.cl.Reader, p.ec.Namespace, p.ec.Name)
	if err != nil {
		return ctrl.Result{}, true, fmt.Errorf("list members (live): %w", err)
	}
	left := 0
	for i := range items {
		m := &items[i]
		if !metav1.IsControlledBy(m, p.ec) || !p.ec.Status.Recovery.Replaced(m.UID) {
			continue
		}
		left++
		if m.DeletionTimestamp == nil {
			if err := p.cl.Client.Delete(ctx, m, client.Preconditions{UID: &m.UID}); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, true, fmt.Errorf("remove lost member %s: %w", m.Name, err)
			}
		}
	}
	if left > 0 {
		return ctrl.Result{RequeueAfter: requeueEtcd}, true, nil
	}
	return ctrl.Result{}, false, nil
}

// setTotalLoss sets TotalLoss=True, with one Warning Event per reason.
func (p *pass) setTotalLoss(reason, msg string) {
	prev := apimeta.FindStatusCondition(p.ec.Status.Conditions, v1alpha1.ConditionTotalLoss)
	if reason != v1alpha1.ReasonRestoringAfterTotalLoss && (prev == nil || prev.Reason != reason || prev.Status != metav1.ConditionTrue) {
		p.event(corev1.EventTypeWarning, reason, "%s", msg)
	}
	p.setCondition(v1alpha1.ConditionTotalLoss, metav1.ConditionTrue, reason, msg)
}

// clearTotalLoss drops a TotalLoss True or Unknown (pending) that no
// longer holds (a member
// answers again, or may hold data) while no restore is under way; the
// outcome of a restore (False) stays.
func (p *pass) clearTotalLoss() {
	c := apimeta.FindStatusCondition(p.ec.Status.Conditions, v1alpha1.ConditionTotalLoss)
	if c != nil && c.Status != metav1.ConditionFalse {
		apimeta.RemoveStatusCondition(&p.ec.Status.Conditions, v1alpha1.ConditionTotalLoss)
	}
}
