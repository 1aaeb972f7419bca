package etcdmember

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// SetupWithManager runs r for the single cluster of mgr: EtcdMembers and
// the Pods and PVCs they own. The request's cluster name is always "".
func SetupWithManager(mgr ctrl.Manager, r *Reconciler, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("etcdmember").
		For(&v1alpha1.EtcdMember{}).
		Owns(&corev1.Pod{}).
		Owns(&corev1.PersistentVolumeClaim{}).
		WithOptions(opts).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			return r.Reconcile(ctx, "", req.NamespacedName)
		}))
}
