package etcdcluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/replacement"
)

// settleReplacement keeps the cluster's side of member replacements (see
// status.replacing and status.replacement): it releases the lease once the
// removal it covers has taken effect, and lifts the backoff and cap of
// crash-loop and pod-loss replacements after every member was Ready for
// the policy's healthy period. It returns when to look again for a
// pending reset.
//
// The lease is not held until a successor is Ready: this controller adds
// a successor only once every member is Ready, so with two members crash
// looping the second could never be replaced. Once the first is gone from
// the API its finalizer has removed it from etcd, so the next member's
// quorum check, made on live membership, counts without it.
func (p *pass) settleReplacement(ctx context.Context, policy replacement.Policy) (ctrl.Result, error) {
	st := &p.ec.Status
	whole := p.complete()
	if lease := st.Replacing; lease != nil {
		done, err := p.leaseDone(ctx, lease)
		if err != nil {
			return ctrl.Result{}, err
		}
		if done {
			st.Replacing = nil
			p.event(corev1.EventTypeNormal, "MemberRemovalDone", "member %s was removed (or is back and Ready); another member may be replaced", lease.Member)
		}
	}
	rec, left := policy.ObserveReady(p.now, st.Replacement, whole && st.Replacing == nil)
	st.Replacement = rec
	if rec != nil && rec.CappedCount == 0 && apimeta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionReplacementsExhausted) {
		p.setCondition(v1alpha1.ConditionReplacementsExhausted, metav1.ConditionFalse, v1alpha1.ReasonCapReset,
			"every member was Ready for "+policy.HealthyReset.String())
	}
	return ctrl.Result{RequeueAfter: left}, nil
}

// leaseDone reports whether the leased removal is over: the member is gone
// (read live: the cache may not have seen the delete yet; gone means its
// finalizer removed it from etcd), or it is back, Ready and not being
// deleted (the removal was abandoned). The member controller marks a member
// not Ready before it takes the lease, so a stale Ready is not mistaken for
// that.
func (p *pass) leaseDone(ctx context.Context, lease *v1alpha1.ReplacementLease) (bool, error) {
	m := &v1alpha1.EtcdMember{}
	err := p.cl.Reader.Get(ctx, types.NamespacedName{Namespace: p.ec.Namespace, Name: lease.Member}, m)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return m.UID != lease.MemberUID || (m.DeletionTimestamp == nil && isReady(m)), nil
}
