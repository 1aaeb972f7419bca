package lincheck

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

// FollowMembers points the workload at the cluster's current members
// (a spec that replaces every member: a memory cluster's roll, a recovery
// from a survivor)
// every 250 ms until the returned stop (called before the workload's
// client closes), which points it once more.
func (r *Running) FollowMembers(ctx context.Context, c client.Client, ns, name string) (stop func()) {
	follow := func(ctx context.Context) {
		var list v1alpha1.EtcdMemberList
		if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelCluster: name}); err != nil {
			return
		}
		var eps []string
		for i := range list.Items {
			if list.Items[i].DeletionTimestamp == nil {
				eps = append(eps, etcd.MemberClientURL(&list.Items[i]))
			}
		}
		if len(eps) > 0 {
			r.SetEndpoints(eps...)
		}
	}
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for fctx.Err() == nil {
			follow(fctx)
			select {
			case <-fctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	var once bool
	stop = func() {
		if !once {
			once = true
			cancel()
			<-done
			follow(ctx)
		}
	}
	DeferCleanup(func() {
		if !once {
			once = true
			cancel()
			<-done
		}
	})
	return stop
}
