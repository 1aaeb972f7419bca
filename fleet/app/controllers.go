package app

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
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

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdcluster"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdmember"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

// controllerOptions are set per controller: at multicluster-runtime
// v0.24.1 the manager-wide controller defaults are not applied to
// multicluster controllers. There is deliberately no ReconciliationTimeout:
// a manager-wide one silently disengages every cluster, and each etcd call
// already carries its own bounded timeout.
func controllerOptions(workers int) controller.TypedOptions[mcreconcile.Request] {
	return controller.TypedOptions[mcreconcile.Request]{
		MaxConcurrentReconciles: workers,
		// Per-item backoff only: 5 ms doubling to 5 min. The fleet-wide pace
		// of destructive actions is the shared limiter's job, not the queue's.
		RateLimiter:        workqueue.NewTypedItemExponentialFailureRateLimiter[mcreconcile.Request](5e6, 300e9),
		SkipNameValidation: &skipNameValidation,
	}
}

// setupControllers registers the EtcdMember and EtcdCluster reconcilers for
// every engaged cluster. grants carries the limiter's wake-ups: a member
// whose turn came is reconciled at once instead of at its requeue time.
// changed is told the cluster of every EtcdCluster reconcile: those run on
// every change of an EtcdCluster or of its members (readiness, quorum,
// replacement counts), which is exactly what the dashboard shows.
func setupControllers(mgr mcmanager.Manager, src *registry, m *etcdmember.Reconciler, c *etcdcluster.Reconciler, workers int,
	grants <-chan event.TypedGenericEvent[gate.Request], changed func(cluster string)) error {
	wake := source.TypedChannel(grants, handler.TypedFuncs[gate.Request, mcreconcile.Request]{
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[gate.Request], q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
			q.Add(mcreconcile.Request{ClusterName: multicluster.ClusterName(e.Object.Cluster),
				Request: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: e.Object.Namespace, Name: e.Object.Member}}})
		},
	})
	if err := mcbuilder.ControllerManagedBy(mgr).Named("etcdmember").
		For(&v1alpha1.EtcdMember{}).
		Owns(&corev1.Pod{}).
		Owns(&corev1.PersistentVolumeClaim{}).
		WatchesRawSource(wake).
		WithOptions(controllerOptions(workers)).
		Complete(mcreconcile.Func(func(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
			return m.Reconcile(ctx, string(req.ClusterName), req.NamespacedName)
		})); err != nil {
		return err
	}
	return mcbuilder.ControllerManagedBy(mgr).Named("etcdcluster").
		For(&v1alpha1.EtcdCluster{}).
		Owns(&v1alpha1.EtcdMember{}).
		Owns(&corev1.Service{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		WithOptions(controllerOptions(workers)).
		Complete(mcreconcile.Func(func(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
			defer changed(string(req.ClusterName))
			return c.Reconcile(ctx, string(req.ClusterName), req.NamespacedName)
		}))
}
