package pvc

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

// Build returns the claim of a non-memory member, without an ownerRef.
func Build(m *v1alpha1.EtcdMember) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:      etcd.PVCName(m.Name),
			Namespace: m.Namespace,
			Labels:    v1alpha1.MemberLabels(m.Spec.ClusterName, m.Name),
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			// One Pod at a time writes the data dir.
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: m.Spec.Storage.StorageClassName,
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: m.Spec.Storage.Size.DeepCopy()},
			},
		},
	}
}

// Sync ensures the data claim of m exists and is controlled by m, and
// returns it. For a memory-backed member it returns nil, nil. An existing
// claim controlled by anything but m's UID is returned as a
// *component.ForeignError and left untouched.
func Sync(ctx context.Context, c client.Client, m *v1alpha1.EtcdMember) (*corev1.PersistentVolumeClaim, error) {
	if m.Spec.Storage.Medium == v1alpha1.StorageMediumMemory {
		return nil, nil
	}
	cur := &corev1.PersistentVolumeClaim{}
	err := c.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: etcd.PVCName(m.Name)}, cur)
	switch {
	case err == nil:
		if !component.ControlledBy(cur, m.UID) {
			return nil, &component.ForeignError{Kind: "PVC", Name: cur.Name, OwnerKind: "member", Owner: m.Name}
		}
		return cur, nil
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get PVC %s: %w", etcd.PVCName(m.Name), err)
	}

	want := Build(m)
	if err := controllerutil.SetControllerReference(m, want, c.Scheme()); err != nil {
		return nil, fmt.Errorf("set owner of PVC %s: %w", want.Name, err)
	}
	if err := c.Create(ctx, want); err != nil {
		// AlreadyExists (a stale cache) is returned too: the next
		// reconcile reads the claim and runs the ownership check on it.
		return nil, fmt.Errorf("create PVC %s: %w", want.Name, err)
	}
	return want, nil
}
