package pvc

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// Syncer syncs the data claim of a member.
type Syncer struct{ client client.Client }

var _ component.Syncer[*v1alpha1.EtcdMember, *corev1.PersistentVolumeClaim] = Syncer{}

// New returns the claim Syncer writing through c.
func New(c client.Client) Syncer { return Syncer{client: c} }

// Sync ensures the data claim of m exists and is controlled by m, and
// returns it. For a memory-backed member it returns nil, nil. An existing
// claim controlled by anything but m's UID is returned as a
// *component.ForeignError and left untouched. The claim is never updated.
func (o Syncer) Sync(ctx context.Context, m *v1alpha1.EtcdMember) (*corev1.PersistentVolumeClaim, error) {
	if m.Spec.Storage.Medium == v1alpha1.StorageMediumMemory {
		return nil, nil
	}
	return component.Ensure(ctx, o.client, component.Object[*corev1.PersistentVolumeClaim]{
		Owner: m, OwnerKind: "member", Kind: "PVC", Want: Build(m),
	})
}
