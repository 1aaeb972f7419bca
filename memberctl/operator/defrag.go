package operator

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcddefrag"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// setupDefrag registers the EtcdDefrag reconciler and the defrag schedule
// (which reconciles EtcdClusters, beside the cluster controller) for every
// cluster mgr engages, with etcddefrag.DefaultOptions.
func (o MulticlusterOptions) setupDefrag(mgr mcmanager.Manager) error {
	d := &etcddefrag.Reconciler{Clusters: o.Clusters, Options: etcddefrag.DefaultOptions()}
	if err := o.complete(controllerFor(mgr, workload.DefragController).WithOptions(o.controllerOptions()),
		func(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
			return d.Reconcile(ctx, string(req.ClusterName), req.NamespacedName)
		}); err != nil {
		return err
	}
	s := &etcddefrag.ScheduleReconciler{Clusters: o.Clusters, Options: etcddefrag.DefaultOptions()}
	b := mcbuilder.ControllerManagedBy(mgr).Named(workload.DefragScheduleController).For(&v1alpha1.EtcdCluster{})
	return o.complete(b.WithOptions(o.controllerOptions()), func(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
		return s.Reconcile(ctx, string(req.ClusterName), req.NamespacedName)
	})
}
