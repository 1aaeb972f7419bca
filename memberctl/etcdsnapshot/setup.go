package etcdsnapshot

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// SetupWithManager runs r for the single cluster of mgr, with the watches
// of workload.Kinds (EtcdSnapshots and the Jobs they own). The request's
// cluster name is always "".
func SetupWithManager(mgr ctrl.Manager, r *Reconciler, opts controller.Options) error {
	return workload.SetupController(mgr, workload.SnapshotController, opts,
		reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			return r.Reconcile(ctx, "", req.NamespacedName)
		}))
}
