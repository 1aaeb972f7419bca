package etcdcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

// observeRevisionEvery (the default of Options.ObserveRevisionEvery)
// bounds how often status.lastObserved is refreshed.
// Each refresh is a status write, which wakes this reconciler again, so a
// cluster under load must not be written on every pass; the price is that
// a restore's lostRevisions may undercount the last half minute of writes.
const observeRevisionEvery = 30 * time.Second

// observeRevision keeps status.lastObserved, the newest keyspace revision
// seen, for clusters that opted in to a restore after total loss: it is
// what tells how much that restore loses. One Status call, at most every
// Options.ObserveRevisionEvery, while etcd answers.
func (p *pass) observeRevision(ctx context.Context) {
	st := &p.ec.Status
	if r := p.ec.Spec.Recovery; r == nil || !(r.RestoreOnTotalLoss || r.RecoversFromSurvivor()) || !p.etcd.ok || st.ClusterID == "" {
		return
	}
	if st.LastObserved != nil && p.now.Sub(st.LastObserved.At.Time) < p.o.ObserveRevisionEvery {
		return
	}
	for _, m := range p.members.running {
		if !isReady(m) {
			continue
		}
		t, err := p.target(ctx, "")
		if err != nil {
			return
		}
		s, err := p.cl.Etcd.Status(ctx, t, etcd.MemberClientURL(m))
		if err != nil {
			log.FromContext(ctx).V(1).Info("revision not observed", "member", m.Name, "error", err.Error())
			continue
		}
		st.LastObserved = &v1alpha1.ObservedRevision{Revision: s.Revision, At: metav1.NewTime(p.now.Truncate(time.Second))}
		return
	}
}

// newRecovery is the restore decision for snap, with what it cannot hold:
// the revisions and the time between the snapshot and the last state seen.
func newRecovery(snap *v1alpha1.EtcdSnapshot, st *v1alpha1.EtcdClusterStatus, now time.Time) *v1alpha1.RecoveryStatus {
	src := fromSnapshot(snap)
	r := &v1alpha1.RecoveryStatus{Phase: v1alpha1.RecoveryRestoring, StartedAt: metav1.NewTime(now.Truncate(time.Second)),
		PreviousClusterID: st.ClusterID, Source: *src, URI: snap.Status.Artifact.URI,
		SnapshotCompletedAt: snap.Status.CompletedAt.DeepCopy(), LastObserved: st.LastObserved.DeepCopy()}
	if o := r.LastObserved; o != nil {
		r.LostRevisions = max(0, o.Revision-src.Revision)
		r.LostWindow = &metav1.Duration{Duration: max(0, o.At.Sub(snap.Status.CompletedAt.Time))}
	}
	return r
}

// finishRecovery records the outcome once the restored seed formed the
// new cluster: status.recovery is Restored, TotalLoss turns False, and an
// Event says what was restored and what was lost.
func (p *pass) finishRecovery() {
	r := p.ec.Status.Recovery
	r.Phase = v1alpha1.RecoveryRestored
	r.ClusterID = p.ec.Status.ClusterID
	r.CompletedAt = &metav1.Time{Time: p.now.Truncate(time.Second)}
	if r.FromSurvivor != "" {
		msg := fmt.Sprintf("recovered etcd cluster %s, which lost a majority, from survivor %s: restored %s as new etcd cluster %s",
			r.PreviousClusterID, r.FromSurvivor, describeSource(r), r.ClusterID)
		p.setCondition(v1alpha1.ConditionQuorumRecovery, metav1.ConditionFalse, v1alpha1.ReasonRecoveredFromSurvivor, msg)
		p.event(corev1.EventTypeNormal, v1alpha1.ReasonRecoveredFromSurvivor, "%s", msg)
		return
	}
	msg := fmt.Sprintf("restored %s as new etcd cluster %s after the total loss of cluster %s. %s",
		describeSource(r), r.ClusterID, r.PreviousClusterID, describeLoss(r))
	p.setCondition(v1alpha1.ConditionTotalLoss, metav1.ConditionFalse, v1alpha1.ReasonRestoredAfterTotalLoss, msg)
	p.event(corev1.EventTypeNormal, v1alpha1.ReasonRestoredAfterTotalLoss, "%s", msg)
}

func describeSource(r *v1alpha1.RecoveryStatus) string {
	at := ""
	if r.SnapshotCompletedAt != nil {
		at = ", completed " + r.SnapshotCompletedAt.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("EtcdSnapshot %s (%s, revision %d%s)", r.Source.SnapshotName, r.URI, r.Source.Revision, at)
}

func describeLoss(r *v1alpha1.RecoveryStatus) string {
	o := r.LastObserved
	if o == nil {
		return "No revision of the lost cluster was observed: how much recent data is lost is unknown."
	}
	return fmt.Sprintf("Lost: at least %d revision(s) and %s of history after the snapshot (last observed revision %d at %s); writes after that are unknown.",
		r.LostRevisions, r.LostWindow.Duration, o.Revision, o.At.UTC().Format(time.RFC3339))
}
