package etcddefrag

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// SetupWithManager runs the EtcdDefrag reconciler and the schedule
// reconciler for the single cluster of mgr, both on src.
func SetupWithManager(mgr ctrl.Manager, src workload.Source, o Options, opts controller.Options) error {
	if err := workload.SetupSingle(mgr, workload.DefragController, opts, &Reconciler{Clusters: src, Options: o}); err != nil {
		return err
	}
	s := &ScheduleReconciler{Clusters: src, Options: o}
	return ctrl.NewControllerManagedBy(mgr).Named(workload.DefragScheduleController).For(&v1alpha1.EtcdCluster{}).
		WithOptions(opts).Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		return s.Reconcile(ctx, "", req.NamespacedName)
	}))
}
