package etcdmember

import (
	"context"
	"fmt"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

// finalize removes a deleted member from etcd, through the other voters,
// before letting the EtcdMember (and, by ownership, its Pod and PVC) go.
func (s *run) finalize(ctx context.Context) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(s.m, v1alpha1.FinalizerMemberCleanup) {
		return ctrl.Result{}, nil
	}
	ec, err := s.parent(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	// The whole etcd cluster is going, or was lost and is being restored
	// from a snapshot (this member is one of the lost): no etcd to tell.
	if ec != nil && ec.DeletionTimestamp == nil && !ec.Status.Recovery.Replaced(s.m.UID) {
		if err := s.removeFromEtcd(ctx); err != nil {
			s.warn("RemovalBlocked", "cannot remove member %s from etcd yet: %v", s.m.Name, err)
			return ctrl.Result{}, err // backoff, not a fixed retry
		}
	}
	patch := client.MergeFrom(s.m.DeepCopy())
	controllerutil.RemoveFinalizer(s.m, v1alpha1.FinalizerMemberCleanup)
	return ctrl.Result{}, client.IgnoreNotFound(s.cl.Client.Patch(ctx, s.m, patch))
}

// lastMember decides the finalizer of m when no other member can be
// dialled. A member alone in its cluster goes: there is nobody to tell.
// But when every member is being deleted while the EtcdCluster is not (a
// `kubectl delete etcdmembers --all`), each would see "no other member",
// drop its finalizer, and take its data claim with it: the whole etcd
// cluster's data, silently. Those finalizers hold, with an error that says
// how to remove the cluster on purpose.
func lastMember(m *v1alpha1.EtcdMember, members []v1alpha1.EtcdMember) error {
	deleting := 0
	for _, o := range members {
		switch {
		case o.Name == m.Name:
		case o.DeletionTimestamp == nil:
			return fmt.Errorf("member %s has no Pod yet to reach etcd through", o.Name)
		default:
			deleting++
		}
	}
	if deleting > 0 {
		return fmt.Errorf("every member of EtcdCluster %s is being deleted while the EtcdCluster is not: releasing them "+
			"would garbage-collect every member's data; delete the EtcdCluster to remove the etcd cluster, or remove "+
			"finalizer %s from its EtcdMembers by hand to accept the loss", m.Spec.ClusterName, v1alpha1.FinalizerMemberCleanup)
	}
	return nil
}

func (s *run) removeFromEtcd(ctx context.Context) error {
	members, err := etcd.Members(ctx, s.cl.Reader, s.m.Namespace, s.m.Spec.ClusterName)
	if err != nil {
		return err
	}
	others := etcd.Select(members, s.m.Name)
	if len(others) == 0 {
		return lastMember(s.m, members)
	}
	t, err := etcd.TargetFor(ctx, s.cl.Reader, s.cl.Name, others)
	if err != nil {
		return err
	}
	id := memberID(s.m)
	if id == 0 { // added but never started, or never discovered
		_, list, err := s.cl.Etcd.MemberList(ctx, t)
		if err != nil {
			return err
		}
		found, ok := etcd.FindMember(list, s.m.Name, etcd.MemberPeerURL(s.m))
		if !ok {
			return nil
		}
		id = found.ID
	}
	if err := s.cl.Etcd.Remove(ctx, t, id); err != nil && !strings.Contains(err.Error(), "member not found") {
		return err
	}
	s.cl.Recorder.Eventf(s.m, "Normal", "RemovedFromEtcd", "removed member %s (%016x) from etcd", s.m.Name, id)
	return nil
}
