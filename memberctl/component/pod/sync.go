package pod

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component"
)

// ErrMissingSecret matches (errors.Is) every *MissingSecretError.
var ErrMissingSecret = errors.New("TLS Secret not found")

// MissingSecretError reports a TLS Secret the member's Pod would mount but
// that does not exist. Sync creates no Pod then: the Pod would sit in
// ContainerCreating, and the member would look like a slow start rather
// than a configuration error.
type MissingSecretError struct {
	Namespace, Name, Member string
}

func (e *MissingSecretError) Error() string {
	return fmt.Sprintf("TLS Secret %s/%s referenced by member %s does not exist", e.Namespace, e.Name, e.Member)
}

// Is makes errors.Is(err, ErrMissingSecret) true for a *MissingSecretError.
func (e *MissingSecretError) Is(target error) bool { return target == ErrMissingSecret }

// Syncer syncs the Pod of a member.
type Syncer struct {
	client client.Client
	opts   BuildOptions
}

var _ component.Syncer[*v1alpha1.EtcdMember, *corev1.Pod] = Syncer{}

// New returns the Pod Syncer building with opts, writing through c.
func New(c client.Client, opts BuildOptions) Syncer { return Syncer{client: c, opts: opts} }

// Sync ensures m's Pod exists and returns it.
//
// An existing Pod must be controlled by m's UID; otherwise Sync returns a
// *component.ForeignError and does not touch it. On m's own Pod, Sync only
// adds or removes the role label to match status.isVoter. A Succeeded or
// Failed Pod is returned as it is: replacing it is the caller's decision.
//
// A missing Pod is created from Build with a controller ownerRef to m, after
// checking that every Secret it mounts exists (*MissingSecretError if not).
func (o Syncer) Sync(ctx context.Context, m *v1alpha1.EtcdMember) (*corev1.Pod, error) {
	return component.Ensure(ctx, o.client, o.object(m))
}

// Recreate creates m's Pod without reading the cache first: the member
// reconciler calls it right after deleting m's terminal Pod, which the
// cache still holds until the deletion's watch event arrives. It returns
// nil and no error when a Pod of that name still exists: the old Pod is
// not gone yet (a finalizer), and its deletion event brings the next
// reconcile.
func (o Syncer) Recreate(ctx context.Context, m *v1alpha1.EtcdMember) (*corev1.Pod, error) {
	p, err := component.Create(ctx, o.client, o.object(m))
	if apierrors.IsAlreadyExists(err) {
		return nil, nil
	}
	return p, err
}

// RepairRoleLabel keeps the role label of m's existing Pod in step with
// status.isVoter, as Sync does, but never creates a Pod: nil when there is
// none. The observe path uses it: a Pod that vanished since it was read
// must be replaced through the member's one replace flow (a memory
// member's Pod never comes back under its old member ID), not recreated.
func (o Syncer) RepairRoleLabel(ctx context.Context, m *v1alpha1.EtcdMember) (*corev1.Pod, error) {
	return component.RepairExisting(ctx, o.client, o.object(m))
}

func (o Syncer) object(m *v1alpha1.EtcdMember) component.Object[*corev1.Pod] {
	return component.Object[*corev1.Pod]{
		Owner: m, OwnerKind: "member", Kind: "Pod", Want: Build(m, o.opts),
		Repair:       repairRoleLabel,
		BeforeCreate: func(ctx context.Context) error { return checkSecrets(ctx, o.client, m) },
	}
}

// repairRoleLabel sets or removes only the role label, as on want: the PDB
// counts voters by it, and nothing else about a running Pod may change (its
// spec is immutable: a re-templated member's Pod is restarted, not edited).
func repairRoleLabel(cur, want *corev1.Pod) bool {
	wantVal, wantHas := want.Labels[v1alpha1.LabelRole]
	curVal, curHas := cur.Labels[v1alpha1.LabelRole]
	if wantHas == curHas && wantVal == curVal {
		return false
	}
	if !wantHas {
		delete(cur.Labels, v1alpha1.LabelRole)
		return true
	}
	return component.MergeLabels(cur, map[string]string{v1alpha1.LabelRole: wantVal})
}

// checkSecrets reads only the Secrets' metadata: existence is all it needs,
// and a cache-backed client then keeps no key material in memory.
func checkSecrets(ctx context.Context, c client.Client, m *v1alpha1.EtcdMember) error {
	for _, s := range tlsSecrets(m.Spec.TLS) {
		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		err := c.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: s.secret}, meta)
		if apierrors.IsNotFound(err) {
			return &MissingSecretError{Namespace: m.Namespace, Name: s.secret, Member: m.Name}
		}
		if err != nil {
			return fmt.Errorf("get Secret %s: %w", s.secret, err)
		}
	}
	return nil
}
