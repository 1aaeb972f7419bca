package operator

import (
	"context"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/etcdfleet/etcdfleet/memberctl/etcdbackup"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdcluster"
	"github.com/etcdfleet/etcdfleet/memberctl/etcddefrag"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdmember"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdsnapshot"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// DefaultWorkers is each controller's MaxConcurrentReconciles when
// Options.Workers is 0.
const DefaultWorkers = 4

// Options configure Setup. A zero field takes its default in withDefaults,
// the only place defaults are applied: each part's own DefaultOptions.
type Options struct {
	// Clusters hands the reconcilers the workload.Cluster of every engaged
	// cluster (a single cluster: workload.Static of NewLocalCluster's).
	Clusters workload.Source
	// Member tunes the EtcdMember reconciler, and its replacement policy
	// the EtcdCluster reconciler's cluster-wide cap; zero is
	// etcdmember.DefaultOptions.
	Member etcdmember.Options
	// Snapshot tunes the EtcdSnapshot reconciler; zero is
	// etcdsnapshot.DefaultOptions.
	Snapshot etcdsnapshot.Options
	// Cluster tunes the EtcdCluster reconciler; zero is
	// etcdcluster.DefaultOptions.
	Cluster etcdcluster.Options
	// Backup tunes the spec.backup reconciler; zero is
	// etcdbackup.DefaultOptions.
	Backup etcdbackup.Options
	// Defrag tunes the EtcdDefrag and spec.defrag reconcilers; zero is
	// etcddefrag.DefaultOptions.
	Defrag etcddefrag.Options
	// Workers is MaxConcurrentReconciles of each controller (0:
	// DefaultWorkers).
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

func (o Options) withDefaults() Options {
	if o.Workers == 0 {
		o.Workers = DefaultWorkers
	}
	orDefault(&o.Member, etcdmember.DefaultOptions)
	orDefault(&o.Cluster, etcdcluster.DefaultOptions)
	orDefault(&o.Snapshot, etcdsnapshot.DefaultOptions)
	orDefault(&o.Backup, etcdbackup.DefaultOptions)
	orDefault(&o.Defrag, etcddefrag.DefaultOptions)
	return o
}

// orDefault sets *opts to def() when it is the zero value: a part's
// options are given whole or not at all.
func orDefault[T any](opts *T, def func() T) {
	if reflect.ValueOf(opts).Elem().IsZero() {
		*opts = def()
	}
}

// controllerRow is one reconciler: its controller name (its watches are
// workload.Watches of that name), how it is built from the options, and
// the channel that wakes its requests early, if any.
type controllerRow struct {
	name  string
	build func(o Options) workload.Reconciler
	wake  func(o Options) <-chan event.TypedGenericEvent[gate.Request]
}

// controllers is the one table of the reconcilers. Adding one is a row
// here and its kinds in workload.Kinds.
func controllers() []controllerRow {
	return []controllerRow{
		{name: workload.MemberController,
			build: func(o Options) workload.Reconciler {
				return &etcdmember.Reconciler{Clusters: o.Clusters, Options: o.Member}
			},
			wake: func(o Options) <-chan event.TypedGenericEvent[gate.Request] { return o.Wake }},
		// The cluster reconciler lifts the cluster-wide replacement cap with
		// the members' policy, so both use the same one.
		{name: workload.ClusterController, build: func(o Options) workload.Reconciler {
			return notifying{r: &etcdcluster.Reconciler{Clusters: o.Clusters, Policy: o.Member.Policy, Snapshot: o.Snapshot, Options: o.Cluster}, notify: o.ClusterReconciled}
		}},
		{name: workload.DefragController, build: func(o Options) workload.Reconciler {
			return &etcddefrag.Reconciler{Clusters: o.Clusters, Options: o.Defrag}
		}},
		{name: workload.DefragScheduleController, build: func(o Options) workload.Reconciler {
			return &etcddefrag.ScheduleReconciler{Clusters: o.Clusters, Options: o.Defrag}
		}},
		{name: workload.SnapshotController,
			build: func(o Options) workload.Reconciler {
				return &etcdsnapshot.Reconciler{Clusters: o.Clusters, Options: o.Snapshot}
			},
			wake: func(o Options) <-chan event.TypedGenericEvent[gate.Request] { return o.SnapshotWake }},
		{name: workload.BackupController, build: func(o Options) workload.Reconciler {
			return &etcdbackup.Reconciler{Clusters: o.Clusters, Options: o.Backup, Snapshot: o.Snapshot}
		}},
	}
}

// notifying tells notify (if set) the cluster of every reconcile of r.
type notifying struct {
	r      workload.Reconciler
	notify func(cluster string)
}

func (n notifying) Reconcile(ctx context.Context, cluster string, req types.NamespacedName) (ctrl.Result, error) {
	if n.notify != nil {
		defer n.notify(cluster)
	}
	return n.r.Reconcile(ctx, cluster, req)
}

// Setup registers every reconciler of controllers() on mgr, for every
// cluster it engages: the provider's, or with no provider the local
// cluster (multicluster-runtime's default), named "". Production (the
// fleet) and the single-cluster operator of the tests share this wiring.
func Setup(mgr mcmanager.Manager, opts Options) error {
	o := opts.withDefaults()
	for _, c := range controllers() {
		b := controllerFor(mgr, c.name).WithOptions(o.controllerOptions())
		if c.wake != nil {
			if ch := c.wake(o); ch != nil {
				b = b.WatchesRawSource(wakeSource(ch))
			}
		}
		r := c.build(o)
		if err := o.complete(b, func(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
			return r.Reconcile(ctx, string(req.ClusterName), req.NamespacedName)
		}); err != nil {
			return err
		}
	}
	return nil
}

// controllerOptions are set per controller: at multicluster-runtime
// v0.24.1 the manager-wide controller defaults are not applied to
// multicluster controllers. The ReconciliationTimeout ends only the
// reconcile's context: every cluster's engagement context comes from the
// cluster provider, never from a reconcile, so it cannot disengage one.
func (o Options) controllerOptions() controller.TypedOptions[mcreconcile.Request] {
	skip := o.SkipNameValidation
	return controller.TypedOptions[mcreconcile.Request]{
		MaxConcurrentReconciles: o.Workers,
		ReconciliationTimeout:   o.ReconcileTimeout,
		// Per-item backoff only: 5 ms doubling to 5 min. The fleet-wide pace
		// of destructive actions is the gate's job, not the queue's.
		RateLimiter:        workqueue.NewTypedItemExponentialFailureRateLimiter[mcreconcile.Request](5e6, 300e9),
		SkipNameValidation: &skip,
		// The manager's ControllerConfig does not reach multicluster
		// controllers (see above), so the classic queue is set here too:
		// CI hung in the priority queue's shutdown deadlock in exactly
		// these controllers after the manager-wide setting had landed.
		UsePriorityQueue: classicQueue(),
	}
}

// complete builds the controller around r, behind its own per-cluster
// workers when WorkersPerCluster caps them.
func (o Options) complete(b *mcbuilder.Builder, r mcreconcile.Func) error {
	if o.WorkersPerCluster > 0 && o.WorkersPerCluster < o.Workers {
		caps := newWorkerCaps(o.WorkersPerCluster)
		b, r = b.WatchesRawSource(caps.source()), caps.wrap(r)
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
