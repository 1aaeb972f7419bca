package etcdmember

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/etcdfleet/etcdfleet/memberctl/gate"
	"github.com/etcdfleet/etcdfleet/memberctl/replacement"
)

// A PVC member's claim is its data. A member that ran (its etcd member ID
// is known) and whose claim is gone has lost its data, exactly like a
// memory member on a wiped tmpfs: a new empty claim under its old ID would
// make etcd rejoin having forgotten the votes and entries it acknowledged.
// So its claim is never recreated; the member is removed and a new member
// with a new ID replaces it, while quorum holds without it. With every
// claim gone, the cluster controller sees total loss instead.

// claimLost reports whether the member ran and its claim is gone, by a
// live read (the claim cache is filtered by label, so its absence there
// proves nothing). Asked only when the member's Pod is absent, before one
// would be created.
func (s *run) claimLost(ctx context.Context) (bool, error) {
	if isMemory(s.m) || s.m.Status.MemberID == "" || s.m.Status.PVCName == "" {
		return false, nil
	}
	c := &corev1.PersistentVolumeClaim{}
	err := s.cl.Reader.Get(ctx, types.NamespacedName{Namespace: s.m.Namespace, Name: s.m.Status.PVCName}, c)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, err
	}
	// Being deleted: it goes once no Pod uses it (pvc-protection), and a
	// Pod cannot start on it meanwhile.
	return c.DeletionTimestamp != nil, nil
}

// replaceClaimLostMember removes a PVC member whose claim is gone.
func (s *run) replaceClaimLostMember(ctx context.Context) (ctrl.Result, error) {
	claim := s.m.Status.PVCName
	return s.removeMember(ctx, job{
		action: gate.PodLossReplace, cause: replacement.Cause{Reason: "ClaimLost"},
		podUID: types.UID("claim/" + claim), // no Pod: the claim is what is replaced
		died:   fmt.Sprintf("member %s (ID %s) lost its claim %s, and its data with it", s.m.Name, s.m.Status.MemberID, claim),
		check: func(ctx context.Context) (safety, error) {
			lost, err := s.claimLost(ctx)
			if err != nil || !lost {
				return safety{why: "its claim " + claim + " is back"}, err
			}
			live, err := s.livePod(ctx)
			if err != nil || live != nil {
				return safety{why: "its Pod exists"}, err
			}
			return s.podLossSafety(ctx, true)
		},
	}, "PVCMemberLost", func() string { return "a new claim under its old ID would make etcd forget what it acknowledged" })
}
