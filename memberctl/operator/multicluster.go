package operator

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/etcdfleet/etcdfleet/memberctl/etcdcluster"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdmember"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// MulticlusterOptions configure SetupMulticluster.
type MulticlusterOptions struct {
	// Clusters hands the reconcilers the workload.Cluster of every engaged
	// cluster.
	Clusters workload.Source
	// Member tunes the EtcdMember reconciler.
	Member etcdmember.Options
	// Workers is MaxConcurrentReconciles of each controller.
	Workers int
	// Wake carries the gate's grants: a member whose turn came is
	// reconciled at once instead of at its requeue time. Optional.
	Wake <-chan event.TypedGenericEvent[gate.Request]
	// ClusterReconciled, if set, is told the cluster of every EtcdCluster
	// reconcile: those run on every change of an EtcdCluster or of its
	// members (readiness, quorum, replacement counts).
	ClusterReconciled func(cluster string)
	// SkipNameValidation lets tests run several managers in one process.
	SkipNameValidation bool
}

// controllerOptions are set per controller: at multicluster-runtime
// v0.24.1 the manager-wide controller defaults are not applied to
// multicluster controllers. There is deliberately no ReconciliationTimeout:
// a manager-wide one silently disengages every cluster, and each etcd call
// already carries its own bounded timeout.
func (o MulticlusterOptions) controllerOptions() controller.TypedOptions[mcreconcile.Request] {
	skip := o.SkipNameValidation
	return controller.TypedOptions[mcreconcile.Request]{
		MaxConcurrentReconciles: o.Workers,
		// Per-item backoff only: 5 ms doubling to 5 min. The fleet-wide pace
		// of destructive actions is the gate's job, not the queue's.
		RateLimiter:        workqueue.NewTypedItemExponentialFailureRateLimiter[mcreconcile.Request](5e6, 300e9),
		SkipNameValidation: &skip,
	}
}

// SetupMulticluster registers the EtcdMember and EtcdCluster reconcilers
// for every cluster mgr engages, with the watches of workload.Kinds.
func SetupMulticluster(mgr mcmanager.Manager, o MulticlusterOptions) error {
	m := &etcdmember.Reconciler{Clusters: o.Clusters, Options: o.Member}
	// The cluster reconciler lifts the cluster-wide replacement cap with the
	// members' policy, so both use the same one.
	c := &etcdcluster.Reconciler{Clusters: o.Clusters, Policy: o.Member.Policy}
	members := controllerFor(mgr, workload.MemberController).WithOptions(o.controllerOptions())
	if o.Wake != nil {
		members = members.WatchesRawSource(wakeSource(o.Wake))
	}
	if err := members.Complete(mcreconcile.Func(func(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
		return m.Reconcile(ctx, string(req.ClusterName), req.NamespacedName)
	})); err != nil {
		return err
	}
	return controllerFor(mgr, workload.ClusterController).WithOptions(o.controllerOptions()).
		Complete(mcreconcile.Func(func(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
			if o.ClusterReconciled != nil {
				defer o.ClusterReconciled(string(req.ClusterName))
			}
			return c.Reconcile(ctx, string(req.ClusterName), req.NamespacedName)
		}))
}

// controllerFor starts the multicluster builder of the controller named
// name with its workload.Watches.
func controllerFor(mgr mcmanager.Manager, name string) *mcbuilder.Builder {
	reconciled, owned := workload.Watches(name)
	b := mcbuilder.ControllerManagedBy(mgr).Named(name).For(reconciled)
	for _, obj := range owned {
		b = b.Owns(obj)
	}
	return b
}

// wakeSource turns the gate's grants into requests for the granted member.
func wakeSource(grants <-chan event.TypedGenericEvent[gate.Request]) source.TypedSource[mcreconcile.Request] {
	return source.TypedChannel(grants, handler.TypedFuncs[gate.Request, mcreconcile.Request]{
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[gate.Request], q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
			q.Add(mcreconcile.Request{ClusterName: multicluster.ClusterName(e.Object.Cluster),
				Request: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: e.Object.Namespace, Name: e.Object.Member}}})
		},
	})
}
