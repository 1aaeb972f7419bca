package pdb

import (
	"context"
	"maps"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

// MinAvailable returns the etcd majority of max(voters, desired replicas),
// where the desired replicas are status.observed.replicas once latched,
// else spec.replicas.
func MinAvailable(ec *v1alpha1.EtcdCluster, voters int32) int32 {
	replicas := v1alpha1.DefaultReplicas
	switch {
	case ec.Status.Observed != nil:
		replicas = ec.Status.Observed.Replicas
	case ec.Spec.Replicas != nil:
		replicas = *ec.Spec.Replicas
	}
	return int32(etcd.Majority(int(max(voters, replicas))))
}

// Build returns the budget of ec for the given voter count, without an ownerRef.
func Build(ec *v1alpha1.EtcdCluster, voters int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: ec.Name, Namespace: ec.Namespace, Labels: v1alpha1.ClusterLabels(ec.Name)},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(MinAvailable(ec, voters))),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{
				v1alpha1.LabelCluster: ec.Name,
				v1alpha1.LabelRole:    v1alpha1.RoleVoter,
			}},
		},
	}
}

// Syncer syncs the budget of a cluster for a given voter count.
type Syncer struct {
	client client.Client
	voters int32
}

var _ component.Syncer[*v1alpha1.EtcdCluster, *policyv1.PodDisruptionBudget] = Syncer{}

// New returns the budget Syncer for the cluster's current voter count,
// writing through c.
func New(c client.Client, voters int32) Syncer { return Syncer{client: c, voters: voters} }

// Sync ensures the budget of ec matches the voter count and returns it, or
// deletes it and returns nil when there are no voters.
func (o Syncer) Sync(ctx context.Context, ec *v1alpha1.EtcdCluster) (*policyv1.PodDisruptionBudget, error) {
	obj := component.Object[*policyv1.PodDisruptionBudget]{
		Owner: ec, OwnerKind: "EtcdCluster", Kind: "PDB", Want: Build(ec, o.voters), Repair: repair,
	}
	if o.voters <= 0 {
		return nil, component.Remove(ctx, o.client, obj)
	}
	return component.Ensure(ctx, o.client, obj)
}

// repair copies the owned fields of want into cur and reports whether
// anything changed. maxUnavailable is cleared: the two are exclusive.
func repair(cur, want *policyv1.PodDisruptionBudget) bool {
	changed := component.MergeLabels(cur, want.Labels)
	if cur.Spec.MinAvailable == nil || *cur.Spec.MinAvailable != *want.Spec.MinAvailable {
		cur.Spec.MinAvailable = want.Spec.MinAvailable
		changed = true
	}
	if cur.Spec.MaxUnavailable != nil {
		cur.Spec.MaxUnavailable = nil
		changed = true
	}
	if !selectorEqual(cur.Spec.Selector, want.Spec.Selector) {
		cur.Spec.Selector = want.Spec.Selector
		changed = true
	}
	return changed
}

func selectorEqual(a, b *metav1.LabelSelector) bool {
	return a != nil && b != nil && len(a.MatchExpressions) == 0 && len(b.MatchExpressions) == 0 &&
		maps.Equal(a.MatchLabels, b.MatchLabels)
}
