package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/util/sanitize"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
)

// Claim Leases: one per workload cluster identity that a registration
// engages, etcdfleet-claim-<hash of the identity>, in the registration
// namespace; the holder is the registration Secret's name, and the
// annotation keeps the identity itself for whoever reads it.
const (
	claimPrefix             = "etcdfleet-claim-"
	claimIdentityAnnotation = "fleet.etcdfleet.io/cluster-id"
)

// claimName is the claim Lease of identity id: a hash, since an identity
// need not be a valid object name.
func claimName(id string) string {
	sum := sha256.Sum256([]byte(id))
	return claimPrefix + hex.EncodeToString(sum[:10])
}

// claimStore is the provider's ClaimStore (kubeconfigsecret.Options.Claims):
// a cluster identity is engaged through the Secret that holds its claim
// Lease, whichever replica runs that Secret. See the package doc
// ("Duplicate registrations across replicas") for why it is safe.
type claimStore struct {
	c       client.Client        // uncached: a claim is decided on the store's word
	r       func() client.Reader // the manager's cache: registered Secrets and FleetClusters
	ns      string
	sharded bool
	now     func() time.Time
}

var _ kubeconfigsecret.ClaimStore = (*claimStore)(nil)

// Acquire implements kubeconfigsecret.ClaimStore: it creates the claim, or
// takes it over when it names no Secret, this one, or one that can no
// longer be running the cluster (mayRun). Concurrent takers race on the
// Lease's resourceVersion: one wins, the others read the winner.
func (s *claimStore) Acquire(ctx context.Context, id, name string) (string, error) {
	key := client.ObjectKey{Namespace: s.ns, Name: claimName(id)}
	for range 3 {
		now := metav1.NewMicroTime(s.now())
		var l coordv1.Lease
		err := s.c.Get(ctx, key, &l)
		if apierrors.IsNotFound(err) {
			l = coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: key.Name,
				Annotations: map[string]string{claimIdentityAnnotation: id}},
				Spec: coordv1.LeaseSpec{HolderIdentity: ptr.To(name), AcquireTime: &now}}
			if err = s.c.Create(ctx, &l); apierrors.IsAlreadyExists(err) {
				continue
			}
			if err != nil {
				return "", err
			}
			return name, nil
		}
		if err != nil {
			return "", err
		}
		holder := ptr.Deref(l.Spec.HolderIdentity, "")
		if holder == name {
			return name, nil
		}
		if holder != "" {
			live, err := s.mayRun(ctx, holder, id)
			if err != nil || live {
				return holder, err
			}
		}
		l.Spec.HolderIdentity, l.Spec.AcquireTime = ptr.To(name), &now
		if err = s.c.Update(ctx, &l); apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return "", err
		}
		return name, nil
	}
	return "", errors.New("the claim Lease " + key.Name + " kept changing")
}

// Release implements kubeconfigsecret.ClaimStore: the claim is deleted if
// name still holds it (preconditions: not one taken meanwhile).
func (s *claimStore) Release(ctx context.Context, id, name string) error {
	var l coordv1.Lease
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: claimName(id)}, &l); err != nil {
		return client.IgnoreNotFound(err)
	}
	if ptr.Deref(l.Spec.HolderIdentity, "") != name {
		return nil
	}
	err := s.c.Delete(ctx, &l, client.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion})
	if apierrors.IsConflict(err) {
		return nil // taken meanwhile: no longer ours
	}
	return client.IgnoreNotFound(err)
}

// mayRun reports whether the Secret holder may still be running the
// cluster id somewhere: while it is registered and not recorded for
// another identity; and, sharded, while any replica holds its fence
// (mcr-shard-<holder>), since a replica tearing it down, or one whose
// cache saw the Secret before this one's, still holds that.
func (s *claimStore) mayRun(ctx context.Context, holder, id string) (bool, error) {
	key := client.ObjectKey{Namespace: s.ns, Name: holder}
	sec := &corev1.Secret{}
	err := s.r().Get(ctx, key, sec)
	if err != nil && !apierrors.IsNotFound(err) {
		return true, err
	}
	if err == nil && sec.Labels[fleetv1.RegistrationLabel] == "true" {
		fc := &fleetv1.FleetCluster{}
		ferr := s.r().Get(ctx, key, fc)
		if ferr != nil || fc.Status.ClusterID == "" || fc.Status.ClusterID == id {
			return true, nil
		}
	}
	if !s.sharded {
		return false, nil
	}
	var f coordv1.Lease
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: fencePrefix + "-" + sanitize.DNS1123(holder)}, &f); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return true, err
	}
	if ptr.Deref(f.Spec.HolderIdentity, "") == "" || f.Spec.RenewTime == nil || f.Spec.LeaseDurationSeconds == nil {
		return false, nil
	}
	return s.now().Before(f.Spec.RenewTime.Add(time.Duration(*f.Spec.LeaseDurationSeconds) * time.Second)), nil
}
