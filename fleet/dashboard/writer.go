package dashboard

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/limiter"
)

// +kubebuilder:rbac:groups=fleet.etcdfleet.io,resources=fleetclusters;fleets,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=fleet.etcdfleet.io,resources=fleetclusters/status;fleets/status,verbs=get;update

// ControllerName names the writer's controller in logs and metrics.
const ControllerName = "dashboard"

// fleetKey is the Fleet's name (cluster-scoped).
var fleetKey = types.NamespacedName{Name: fleetv1.FleetName}

// requestKind says what a request of the writer's queue recomputes.
type requestKind uint8

const (
	// kindResync lists the registered clusters and queues each of them,
	// the Fleet and the orphan collection. It runs when the controller
	// starts, every Options.Resync, and when the Fleet's spec changes.
	kindResync requestKind = iota
	// kindCluster recomputes and writes one FleetCluster.
	kindCluster
	// kindFleet recomputes and writes the Fleet's status.
	kindFleet
	// kindOrphans deletes FleetClusters unregistered for OrphanGrace.
	kindOrphans
)

// request is an item of the writer's workqueue; the queue keeps at most
// one of each, which is what merges a burst of changes into one write.
type request struct {
	kind    requestKind
	cluster string // Options.ClusterKey, for kindCluster
}

var (
	resyncRequest  = request{kind: kindResync}
	fleetRequest   = request{kind: kindFleet}
	orphansRequest = request{kind: kindOrphans}
)

func clusterRequest(key string) request { return request{kind: kindCluster, cluster: key} }

type queue = workqueue.TypedRateLimitingInterface[request]

// Writer keeps the FleetClusters and the Fleet of the management cluster
// up to date. It is a controller-runtime controller added to a manager by
// SetupWithManager; see the package documentation.
type Writer struct {
	c    client.Client
	src  Source
	lim  LimiterStats
	opts Options
	pace *pacer

	// queue is the controller's workqueue once it started; Notify adds to it.
	queue atomic.Pointer[queue]
	// notifies counts Notify calls, to know when a limiter snapshot is stale.
	notifies atomic.Uint64
	// paused is the last Fleet spec.paused read, for FleetPaused.
	paused atomic.Bool
	// electedCh is the manager's Elected channel: closed once this replica
	// leads, which the Fleet and the orphan collection wait for.
	electedCh <-chan struct{}

	// The rest belongs to the controller's single worker.
	latest       map[string]*fleetv1.FleetClusterStatus // last computed status per cluster key
	missingSince map[types.NamespacedName]time.Time     // FleetClusters seen unregistered
	stats        *limiter.Stats                         // last limiter snapshot
	statsSeq     uint64                                 // notifies when it was taken
}

// New returns a Writer; SetupWithManager starts it with a manager. c is the
// manager's client (reads from its cache); its scheme must know core/v1
// and fleet/api/v1alpha1. lim may be nil.
func New(c client.Client, src Source, lim LimiterStats, opts Options) *Writer {
	opts = opts.withDefaults()
	return &Writer{
		c: c, src: src, lim: lim, opts: opts,
		pace:         newPacer(opts.MinInterval),
		latest:       map[string]*fleetv1.FleetClusterStatus{},
		missingSince: map[types.NamespacedName]time.Time{},
	}
}

// SetupWithManager adds the writer's controller to mgr, the management
// cluster's manager. It runs on the leader only (on every replica with
// Options.Sharded), with one worker.
func (w *Writer) SetupWithManager(mgr manager.Manager) error {
	w.electedCh = mgr.Elected()
	c, err := controller.NewTyped(ControllerName, mgr, controller.TypedOptions[request]{
		Reconciler: reconcile.TypedFunc[request](w.reconcile),
		// One worker: requests share the per-cluster state, and the
		// writes are few and small by design.
		MaxConcurrentReconciles: 1,
		RateLimiter:             w.pace,
		NeedLeaderElection:      ptr.To(!w.opts.Sharded),
	})
	if err != nil {
		return err
	}
	if err := c.Watch(source.TypedFunc[request](w.startQueue)); err != nil {
		return err
	}
	// A change of the Fleet's spec (paused) recomputes every cluster at
	// once; status writes do not bump the generation.
	return c.Watch(source.TypedKind(mgr.GetCache(), &fleetv1.Fleet{},
		handler.TypedEnqueueRequestsFromMapFunc(func(context.Context, *fleetv1.Fleet) []request {
			return []request{resyncRequest}
		}),
		predicate.TypedGenerationChangedPredicate[*fleetv1.Fleet]{}))
}

// startQueue is the source of Notify calls. A channel source would have a
// bounded buffer, and a full one would either block Notify's caller (the
// limiter's grant hook) or drop the call; the workqueue itself is
// unbounded and keeps one entry per cluster, so Notify adds to it
// directly. Calls made before it starts are covered by the first resync,
// queued here.
func (w *Writer) startQueue(_ context.Context, q queue) error {
	w.queue.Store(&q)
	q.Add(resyncRequest)
	return nil
}

// enqueue adds r through the pacer, so it waits out its MinInterval.
func (w *Writer) enqueue(r request) {
	if q := w.queue.Load(); q != nil {
		(*q).AddRateLimited(r)
	}
}

// Notify asks for cluster (Options.ClusterKey) to be recomputed soon. It
// never blocks; calls before the recomputation that handles them are
// merged.
func (w *Writer) Notify(cluster string) {
	w.notifies.Add(1)
	w.enqueue(clusterRequest(cluster))
}

// FleetPaused reports the Fleet's spec.paused, read from the manager's
// cache. A missing Fleet is not paused; when the cache cannot answer, the
// last value read (by this call or by the controller) is returned.
func (w *Writer) FleetPaused() bool {
	ctx, cancel := context.WithTimeout(context.Background(), fleetReadTimeout)
	defer cancel()
	var f fleetv1.Fleet
	switch err := w.c.Get(ctx, fleetKey, &f); {
	case err == nil:
		w.paused.Store(f.Spec.Paused)
	case apierrors.IsNotFound(err):
		w.paused.Store(false)
	}
	return w.paused.Load()
}

// reconcile handles one request. Every kind but the resync is held to
// MinInterval here as well as by the queue's pacer, so a request added
// without the pacer cannot write early either.
func (w *Writer) reconcile(ctx context.Context, r request) (reconcile.Result, error) {
	if r.kind == kindResync {
		return w.resync(), nil
	}
	if wait := w.pace.When(r); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	now := time.Now()
	w.pace.ran(r, now)
	switch {
	case r.kind == kindCluster:
		return w.syncCluster(ctx, r.cluster, now), nil
	case !w.leading():
		// Sharded, not the leader: the leader writes the Fleet and
		// collects orphans; the next resync asks again.
		return reconcile.Result{}, nil
	case r.kind == kindFleet:
		return w.syncFleet(ctx, now), nil
	default:
		return w.collectOrphans(ctx, now), nil
	}
}

// resync queues every registered cluster, the Fleet and the orphan
// collection, and forgets what it kept of unregistered clusters.
func (w *Writer) resync() reconcile.Result {
	infos := sortedClusters(w.src.Clusters())
	w.limiterStats(true)
	keys := make(map[string]bool, len(infos))
	for _, info := range infos {
		key := w.opts.ClusterKey(info)
		keys[key] = true
		w.enqueue(clusterRequest(key))
	}
	for key := range w.latest {
		if !keys[key] {
			delete(w.latest, key)
		}
	}
	w.pace.forget(func(r request) bool { return r.kind == kindCluster && !keys[r.cluster] }, time.Now())
	w.enqueue(fleetRequest)
	w.enqueue(orphansRequest)
	return reconcile.Result{RequeueAfter: w.opts.Resync}
}

// limiterStats returns a limiter snapshot taken after the last Notify (or
// a new one when fresh). A snapshot copies a map entry per cluster, so the
// recomputations of one resync share one; nil without a limiter.
func (w *Writer) limiterStats(fresh bool) *limiter.Stats {
	if w.lim == nil {
		return nil
	}
	seq := w.notifies.Load()
	if fresh || w.stats == nil || w.statsSeq != seq {
		s := w.lim.Snapshot()
		w.stats, w.statsSeq = &s, seq
	}
	return w.stats
}

// retry is the result of a failed or unfinished write: try again once
// MinInterval has passed.
func (w *Writer) retry() reconcile.Result {
	return reconcile.Result{RequeueAfter: w.opts.MinInterval}
}

// logWriteError logs a failed write. A conflict means the cache was behind
// a write of ours; the retry after MinInterval sees the newer object.
func logWriteError(log logr.Logger, err error, what string) {
	if apierrors.IsConflict(err) {
		log.V(1).Info(what+": conflict, retrying", "error", err.Error())
		return
	}
	log.Error(err, what)
}
