package etcdbackup

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// SetupWithManager runs r for the single cluster of mgr, with the watches
// of workload.Kinds (EtcdClusters and the scheduled EtcdSnapshots they
// control).
func SetupWithManager(mgr ctrl.Manager, r *Reconciler, opts controller.Options) error {
	return workload.SetupSingle(mgr, workload.BackupController, opts, r)
}
