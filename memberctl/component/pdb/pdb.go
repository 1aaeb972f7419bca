package pdb

import (
	"context"
	"fmt"
	"maps"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component"
)

// MinAvailable returns max(voters, desired replicas)/2+1, where the desired
// replicas are status.observed.replicas once latched, else spec.replicas.
func MinAvailable(ec *v1alpha1.EtcdCluster, voters int32) int32 {
	replicas := v1alpha1.DefaultReplicas
	switch {
	case ec.Status.Observed != nil:
		replicas = ec.Status.Observed.Replicas
	case ec.Spec.Replicas != nil:
		replicas = *ec.Spec.Replicas
	}
	return max(voters, replicas)/2 + 1
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

// Sync ensures the budget of ec matches voters, or is absent when voters is 0.
func Sync(ctx context.Context, c client.Client, ec *v1alpha1.EtcdCluster, voters int32) error {
	want := Build(ec, voters)
	cur := &policyv1.PodDisruptionBudget{}
	err := c.Get(ctx, client.ObjectKeyFromObject(want), cur)
	notFound := apierrors.IsNotFound(err)
	if err != nil && !notFound {
		return fmt.Errorf("get PDB %s: %w", want.Name, err)
	}
	if !notFound && !component.ControlledBy(cur, ec.UID) {
		return &component.ForeignError{Kind: "PDB", Name: cur.Name, OwnerKind: "EtcdCluster", Owner: ec.Name}
	}

	switch {
	case voters <= 0 && notFound:
		return nil
	case voters <= 0:
		// The UID precondition: never delete a budget created after our Get.
		err := c.Delete(ctx, cur, client.Preconditions{UID: &cur.UID})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete PDB %s: %w", cur.Name, err)
		}
		return nil
	case notFound:
		if err := controllerutil.SetControllerReference(ec, want, c.Scheme()); err != nil {
			return fmt.Errorf("set owner of PDB %s: %w", want.Name, err)
		}
		if err := c.Create(ctx, want); err != nil {
			return fmt.Errorf("create PDB %s: %w", want.Name, err)
		}
		return nil
	}

	before := cur.DeepCopy()
	if !repair(cur, want) {
		return nil
	}
	if err := c.Patch(ctx, cur, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("patch PDB %s: %w", cur.Name, err)
	}
	return nil
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
