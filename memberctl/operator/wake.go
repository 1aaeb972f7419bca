package operator

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/etcdfleet/etcdfleet/memberctl/etcddefrag"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdmember"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdsnapshot"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

// wakeSource turns the gate's grants into requests for the granted member
// (or, for snapshot slots, the granted EtcdSnapshot).
func wakeSource(grants <-chan event.TypedGenericEvent[gate.Request]) source.TypedSource[mcreconcile.Request] {
	return source.TypedChannel(grants, handler.TypedFuncs[gate.Request, mcreconcile.Request]{
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[gate.Request], q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
			q.Add(mcreconcile.Request{ClusterName: multicluster.ClusterName(e.Object.Cluster),
				Request: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: e.Object.Namespace, Name: e.Object.Member}}})
		},
	})
}

// ForgetCluster drops a disengaged cluster's series from every reconciler's
// metrics, so that a fleet that churns clusters does not grow them forever.
func ForgetCluster(name string) {
	etcdmember.ForgetCluster(name)
	etcdsnapshot.ForgetCluster(name)
	etcddefrag.ForgetCluster(name)
}
