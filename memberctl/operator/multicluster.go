package operator

import (
	"context"
	"time"

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

	"github.com/etcdfleet/etcdfleet/memberctl/etcdbackup"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdcluster"
	"github.com/etcdfleet/etcdfleet/memberctl/etcddefrag"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdmember"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdsnapshot"
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
	// Snapshot tunes the EtcdSnapshot reconciler.
	Snapshot etcdsnapshot.Options
	// Backup tunes the spec.backup reconciler; zero is etcdbackup.DefaultOptions.
	Backup etcdbackup.Options
	// Workers is MaxConcurrentReconciles of each controller.
	Workers int
	// WorkersPerCluster caps the reconciles of one cluster in flight in
	// each controller; below Workers, a cluster whose apiserver hangs
	// cannot take every worker. 0, or Workers or more: no cap.
	WorkersPerCluster int
	// ReconcileTimeout ends each reconcile's context after this long
	// (controller-runtime's ReconciliationTimeout); 0: none.
	ReconcileTimeout time.Duration
	// Wake carries the gate's grants: a member whose turn came is
	// reconciled at once instead of at its requeue time. Optional.
	Wake <-chan event.TypedGenericEvent[gate.Request]
	// SnapshotWake carries the snapshot slots' grants (gate.Request with
	// the EtcdSnapshot's name as Member): a snapshot whose slot came is
	// reconciled at once. Optional.
	SnapshotWake <-chan event.TypedGenericEvent[gate.Request]
	// ClusterReconciled, if set, is told the cluster of every EtcdCluster
	// reconcile: those run on every change of an EtcdCluster or of its
	// members (readiness, quorum, replacement counts).
	ClusterReconciled func(cluster string)
	// SkipNameValidation lets tests run several managers in one process.
	SkipNameValidation bool
}

// controllerOptions are set per controller: at multicluster-runtime
// v0.24.1 the manager-wide controller defaults are not applied to
// multicluster controllers. The ReconciliationTimeout ends only the
// reconcile's context: every cluster's engagement context comes from the
// cluster provider, never from a reconcile, so it cannot disengage one.
func (o MulticlusterOptions) controllerOptions() controller.TypedOptions[mcreconcile.Request] {
	skip := o.SkipNameValidation
	return controller.TypedOptions[mcreconcile.Request]{
		MaxConcurrentReconciles: o.Workers,
		ReconciliationTimeout:   o.ReconcileTimeout,
		// Per-item backoff only: 5 ms doubling to 5 min. The fleet-wide pace
		// of destructive actions is the gate's job, not the queue's.
		RateLimiter:        workqueue.NewTypedItemExponentialFailureRateLimiter[mcreconcile.Request](5e6, 300e9),
		SkipNameValidation: &skip,
	}
}

// SetupMulticluster registers the EtcdMember, EtcdCluster and EtcdSnapshot reconcilers
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
	if err := o.complete(members, func(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
		return m.Reconcile(ctx, string(req.ClusterName), req.NamespacedName)
	}); err != nil {
		return err
	}
	if err := o.complete(controllerFor(mgr, workload.ClusterController).WithOptions(o.controllerOptions()),
		func(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
			if o.ClusterReconciled != nil {
				defer o.ClusterReconciled(string(req.ClusterName))
			}
			return c.Reconcile(ctx, string(req.ClusterName), req.NamespacedName)
		}); err != nil {
		return err
	}
	if err := o.setupDefrag(mgr); err != nil {
		return err
	}
	snaps := &etcdsnapshot.Reconciler{Clusters: o.Clusters, Options: o.Snapshot}
	sb := controllerFor(mgr, workload.SnapshotController).WithOptions(o.controllerOptions())
	if o.SnapshotWake != nil {
		sb = sb.WatchesRawSource(wakeSource(o.SnapshotWake))
	}
	if err := o.complete(sb,
		func(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
			return snaps.Reconcile(ctx, string(req.ClusterName), req.NamespacedName)
		}); err != nil {
		return err
	}
	if o.Backup.Grace == 0 {
		o.Backup = etcdbackup.DefaultOptions()
	}
	backups := &etcdbackup.Reconciler{Clusters: o.Clusters, Options: o.Backup}
	return o.complete(controllerFor(mgr, workload.BackupController).WithOptions(o.controllerOptions()),
		func(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
			return backups.Reconcile(ctx, string(req.ClusterName), req.NamespacedName)
		})
}

// complete builds the controller around r, behind its own per-cluster
// slots when WorkersPerCluster caps them.
func (o MulticlusterOptions) complete(b *mcbuilder.Builder, r mcreconcile.Func) error {
	if o.WorkersPerCluster > 0 && o.WorkersPerCluster < o.Workers {
		slots := newClusterSlots(o.WorkersPerCluster)
		b, r = b.WatchesRawSource(slots.source()), slots.wrap(r)
	}
	return b.Complete(r)
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
