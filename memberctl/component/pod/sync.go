package pod

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

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

// Sync ensures m's Pod exists and returns it.
//
// An existing Pod must be controlled by m's UID; otherwise Sync returns a
// *component.ForeignError and does not touch it. On m's own Pod, Sync only
// adds or removes the role label to match status.isVoter. A Succeeded or
// Failed Pod is returned as it is: replacing it is the caller's decision.
//
// A missing Pod is created from Build with a controller ownerRef to m, after
// checking that every Secret it mounts exists (*MissingSecretError if not).
func Sync(ctx context.Context, c client.Client, m *v1alpha1.EtcdMember, opts BuildOptions) (*corev1.Pod, error) {
	cur := &corev1.Pod{}
	err := c.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Name}, cur)
	switch {
	case err == nil:
		if !OwnedBy(cur, m.UID) {
			return nil, &component.ForeignError{Kind: "Pod", Name: cur.Name, OwnerKind: "member", Owner: m.Name}
		}
		if err := syncRoleLabel(ctx, c, cur, m.Status.IsVoter); err != nil {
			return nil, err
		}
		return cur, nil
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get Pod %s: %w", m.Name, err)
	}

	if err := checkSecrets(ctx, c, m); err != nil {
		return nil, err
	}
	want := Build(m, opts)
	if err := controllerutil.SetControllerReference(m, want, c.Scheme()); err != nil {
		return nil, fmt.Errorf("set owner of Pod %s: %w", want.Name, err)
	}
	if err := c.Create(ctx, want); err != nil {
		return nil, fmt.Errorf("create Pod %s: %w", want.Name, err)
	}
	return want, nil
}

// syncRoleLabel patches only the role label, and only when it is wrong: the
// PDB counts voters by it, and nothing else about a running Pod may change.
func syncRoleLabel(ctx context.Context, c client.Client, p *corev1.Pod, voter bool) error {
	val, has := p.Labels[v1alpha1.LabelRole]
	if (voter && val == v1alpha1.RoleVoter) || (!voter && !has) {
		return nil
	}
	base := p.DeepCopy()
	if voter {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[v1alpha1.LabelRole] = v1alpha1.RoleVoter
	} else {
		delete(p.Labels, v1alpha1.LabelRole)
	}
	// A merge patch of one label: no resourceVersion, so a concurrent
	// status write by the kubelet cannot make it conflict.
	if err := c.Patch(ctx, p, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("patch role label of Pod %s: %w", p.Name, err)
	}
	return nil
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
