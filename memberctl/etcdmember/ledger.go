package etcdmember

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// memberLedger counts terminal-Pod replacements in the member's own
// status: the member survives them. It holds no lease, because after a
// whole-cluster reboot every member is terminal and all must come back.
type memberLedger struct{ s *run }

func (l memberLedger) record() *v1alpha1.ReplacementStatus { return l.s.m.Status.Replacement }
func (l memberLedger) heldBy() string                      { return "" }
func (l memberLedger) scope() string                       { return "member" }

// commit writes Ready=False/PodReplacing, the observed Pod UID and the
// record in one status update with the resourceVersion read.
func (l memberLedger) commit(ctx context.Context, st *v1alpha1.ReplacementStatus, j job) error {
	l.s.m.Status.Replacement = st
	l.s.setReady(false, v1alpha1.ReasonPodReplacing, j.died+"; replacing it")
	return l.s.writeStatus(ctx)
}

func (l memberLedger) exhausted(_ context.Context, msg string) error {
	if !meta.IsStatusConditionTrue(l.s.m.Status.Conditions, v1alpha1.ConditionReplacementsExhausted) {
		l.s.warn(v1alpha1.ConditionReplacementsExhausted, "%s", msg)
	}
	l.s.setCondition(v1alpha1.ConditionReplacementsExhausted, metav1.ConditionTrue, v1alpha1.ReasonCapReached, msg)
	return nil // written with the Ready condition by the caller
}

func (l memberLedger) capLifted(msg string) {
	if meta.IsStatusConditionTrue(l.s.m.Status.Conditions, v1alpha1.ConditionReplacementsExhausted) {
		l.s.setCondition(v1alpha1.ConditionReplacementsExhausted, metav1.ConditionFalse, v1alpha1.ReasonCapReset, msg)
	}
}

// clusterLedger counts the replacements that remove the member (crash
// loop, pod loss) in the EtcdCluster's status, and serializes them with
// status.replacing, the lease. Both are written with the resourceVersion
// read, so of two workers (in one manager or two) racing for the lease
// one gets a conflict, and on its retry sees the lease held.
type clusterLedger struct {
	s    *run
	ec   *v1alpha1.EtcdCluster
	orig v1alpha1.EtcdClusterStatus
}

func (s *run) clusterLedger(ctx context.Context) (*clusterLedger, error) {
	ec, err := s.parent(ctx)
	if err != nil {
		return nil, err
	}
	if ec == nil || ec.DeletionTimestamp != nil {
		return nil, fmt.Errorf("EtcdCluster %s/%s is gone or going: not replacing member %s", s.m.Namespace, s.m.Spec.ClusterName, s.m.Name)
	}
	return &clusterLedger{s: s, ec: ec, orig: *ec.Status.DeepCopy()}, nil
}

func (l *clusterLedger) record() *v1alpha1.ReplacementStatus { return l.ec.Status.Replacement }
func (l *clusterLedger) scope() string                       { return "etcd cluster " + l.ec.Name }

func (l *clusterLedger) heldBy() string {
	if lease := l.ec.Status.Replacing; lease != nil && lease.MemberUID != l.s.m.UID {
		return lease.Member
	}
	return ""
}

// commit first marks the member not Ready (so the cluster controller does
// not release the lease while the member still stands), then records the
// replacement and claims the lease in one EtcdCluster status update.
func (l *clusterLedger) commit(ctx context.Context, st *v1alpha1.ReplacementStatus, j job) error {
	l.s.setReady(false, v1alpha1.ReasonPodReplacing, j.died+"; replacing it")
	if err := l.s.writeStatus(ctx); err != nil {
		return err
	}
	l.ec.Status.Replacement = st
	if lease := l.ec.Status.Replacing; lease == nil || lease.PodUID != j.podUID {
		l.ec.Status.Replacing = &v1alpha1.ReplacementLease{Member: l.s.m.Name, MemberUID: l.s.m.UID,
			PodUID: j.podUID, Action: string(j.action), Since: metav1.NewTime(l.s.now)}
	}
	return l.write(ctx)
}

func (l *clusterLedger) exhausted(ctx context.Context, msg string) error {
	first := !meta.IsStatusConditionTrue(l.ec.Status.Conditions, v1alpha1.ConditionReplacementsExhausted)
	l.setCondition(metav1.ConditionTrue, v1alpha1.ReasonCapReached, msg)
	if err := l.write(ctx); err != nil {
		return err
	}
	if first { // once per exhaustion: a racing worker's write conflicted above
		l.s.cl.Recorder.Eventf(l.ec, corev1.EventTypeWarning, v1alpha1.ConditionReplacementsExhausted, "%s", msg)
	}
	return nil
}

func (l *clusterLedger) capLifted(msg string) {
	if meta.IsStatusConditionTrue(l.ec.Status.Conditions, v1alpha1.ConditionReplacementsExhausted) {
		l.setCondition(metav1.ConditionFalse, v1alpha1.ReasonCapReset, msg)
	}
}

func (l *clusterLedger) setCondition(st metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&l.ec.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReplacementsExhausted,
		Status: st, Reason: reason, Message: msg, ObservedGeneration: l.ec.Generation})
}

// write updates the EtcdCluster's status when it changed, failing on any
// concurrent change (the cluster controller's, another member's).
func (l *clusterLedger) write(ctx context.Context) error {
	if equality.Semantic.DeepEqual(l.orig, l.ec.Status) {
		return nil
	}
	if err := l.s.cl.Client.Status().Update(ctx, l.ec); err != nil {
		return fmt.Errorf("record the replacement in EtcdCluster %s: %w", l.ec.Name, err)
	}
	l.orig = *l.ec.Status.DeepCopy()
	return nil
}
