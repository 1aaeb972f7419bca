package dashboard

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/limiter"
)

// +kubebuilder:rbac:groups=fleet.etcdfleet.io,resources=fleetclusters;fleets,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=fleet.etcdfleet.io,resources=fleetclusters/status;fleets/status,verbs=get;update

// passGap is the shortest time between two passes, so a burst of Notify
// calls is handled by one pass instead of one pass each.
const passGap = 100 * time.Millisecond

// fleetKey is the Fleet's key in Writer.lastWrite (FleetClusters are
// namespaced, so it cannot collide).
var fleetKey = types.NamespacedName{Name: fleetv1.FleetName}

// Writer keeps the FleetClusters and the Fleet of the management cluster
// up to date. It is a leader-elected manager.Runnable; see the package
// documentation.
type Writer struct {
	c    client.Client
	src  Source
	lim  LimiterStats
	opts Options

	mu       sync.Mutex
	notified map[string]struct{}
	kick     chan struct{}

	// paused is the last Fleet spec.paused read, for FleetPaused.
	paused atomic.Bool

	// The rest belongs to the Start goroutine.
	log          logr.Logger
	dirty        map[string]bool                        // cluster keys to recompute
	inputs       map[string]inputs                      // what each was last computed from
	latest       map[string]*fleetv1.FleetClusterStatus // last computed status
	lastWrite    map[types.NamespacedName]time.Time     // last write (attempt) per object
	missingSince map[types.NamespacedName]time.Time     // FleetClusters seen unregistered
	registered   map[types.NamespacedName]bool          // as of the last pass
	fleetDirty   bool
	lastPaused   bool
	lastLimiter  *fleetv1.LimiterStatus
}

var (
	_ manager.Runnable               = &Writer{}
	_ manager.LeaderElectionRunnable = &Writer{}
)

// inputs are the cheap inputs of one cluster's status, compared every pass
// to find clusters to recompute without being told.
type inputs struct {
	info           ClusterInfo // without LastProbeTime
	waiting        int
	throttled      uint64
	throttledKnown bool
}

// New returns a Writer. c is the manager's client (reads from its cache);
// its scheme must know core/v1 and fleet/api/v1alpha1. lim may be nil.
func New(c client.Client, src Source, lim LimiterStats, opts Options) *Writer {
	return &Writer{
		c: c, src: src, lim: lim, opts: opts.withDefaults(),
		notified:     map[string]struct{}{},
		kick:         make(chan struct{}, 1),
		dirty:        map[string]bool{},
		inputs:       map[string]inputs{},
		latest:       map[string]*fleetv1.FleetClusterStatus{},
		lastWrite:    map[types.NamespacedName]time.Time{},
		missingSince: map[types.NamespacedName]time.Time{},
		registered:   map[types.NamespacedName]bool{},
	}
}

// NeedLeaderElection is true: only the leader writes.
func (w *Writer) NeedLeaderElection() bool { return true }

// Notify asks for cluster (Options.ClusterKey) to be recomputed soon. It
// never blocks; calls before the pass that handles them are merged.
func (w *Writer) Notify(cluster string) {
	w.mu.Lock()
	w.notified[cluster] = struct{}{}
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// FleetPaused reports the Fleet's spec.paused, read from the manager's
// cache. A missing Fleet is not paused; when the cache cannot answer, the
// last value read (by this call or by the writer's loop) is returned.
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

// Start runs the loop until ctx ends: a pass at once, then on Notify (at
// most every passGap), on Resync, and when a deferred write becomes due.
func (w *Writer) Start(ctx context.Context) error {
	w.log = log.FromContext(ctx).WithName("dashboard")
	resync := time.NewTicker(w.opts.Resync)
	defer resync.Stop()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	full := true
	for {
		started := time.Now()
		next := w.pass(ctx, started, full)
		full = false
		if next.IsZero() {
			timer.Stop()
		} else {
			timer.Reset(max(time.Until(next), 0))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-resync.C:
			full = true
		case <-timer.C:
		case <-w.kick:
			if wait := passGap - time.Since(started); wait > 0 {
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(wait):
				}
			}
		}
	}
}

// due returns when obj may be written next, and whether that is now.
func (w *Writer) due(obj types.NamespacedName, now time.Time) (time.Time, bool) {
	t, ok := w.lastWrite[obj]
	if !ok {
		return now, true
	}
	t = t.Add(w.opts.MinInterval)
	return t, !t.After(now)
}

// wrote records a write attempt on obj: the next waits MinInterval.
func (w *Writer) wrote(obj types.NamespacedName, now time.Time) { w.lastWrite[obj] = now }

// pass recomputes what is dirty and writes what changed and is due. It
// returns when the next deferred work is due (zero: none).
func (w *Writer) pass(ctx context.Context, now time.Time, full bool) time.Time {
	var next time.Time
	later := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}

	w.mu.Lock()
	notified := w.notified
	w.notified = map[string]struct{}{}
	w.mu.Unlock()

	var stats *limiter.Stats
	if w.lim != nil {
		s := w.lim.Snapshot()
		stats = &s
		if ls := limiterStatus(s); !semanticEqual(ls, w.lastLimiter) {
			w.lastLimiter, w.fleetDirty = ls, true
		}
	}
	fleet := w.ensureFleet(ctx, now)
	paused := w.paused.Load()
	if fleet != nil {
		paused = fleet.Spec.Paused
		w.paused.Store(paused)
	}
	if paused != w.lastPaused {
		w.lastPaused, full = paused, true
	}
	if full {
		w.fleetDirty = true
	}

	infos := sortedClusters(w.src.Clusters())
	reg := make(map[types.NamespacedName]bool, len(infos))
	keys := make(map[string]bool, len(infos))
	rows := make([]clusterRow, 0, len(infos))
	for _, info := range infos {
		nn := types.NamespacedName{Namespace: info.Namespace, Name: info.Name}
		reg[nn] = true
		key := w.opts.ClusterKey(info)
		keys[key] = true
		in := inputsOf(info, key, stats)
		if _, ok := notified[key]; ok || full || in != w.inputs[key] {
			w.dirty[key] = true
		}
		if w.dirty[key] {
			if t, ok := w.due(nn, now); !ok {
				later(t)
			} else if w.syncCluster(ctx, info, key, stats, paused, now) {
				w.inputs[key] = in
				delete(w.dirty, key)
			} else {
				later(now.Add(w.opts.MinInterval))
			}
		}
		st := w.latest[key]
		if st == nil {
			s := buildClusterStatus(nil, clusterInput{info: info, fleetPaused: paused}, 0, now)
			st = &s
		}
		rows = append(rows, clusterRow{Namespace: info.Namespace, Name: info.Name, Status: st})
	}
	forgetUnregistered(keys, w.latest)
	forgetUnregistered(keys, w.inputs)
	forgetUnregistered(keys, w.dirty)
	if !sameSet(reg, w.registered) {
		w.registered, w.fleetDirty, full = reg, true, true
	}
	if full || len(w.missingSince) > 0 {
		if t := w.collectOrphans(ctx, reg, now); !t.IsZero() {
			later(t)
		}
	}

	if w.fleetDirty {
		if t, ok := w.due(fleetKey, now); !ok {
			later(t)
		} else if fleet != nil && w.syncFleet(ctx, fleet, rows, stats, paused, now) {
			w.fleetDirty = false
		} else {
			later(now.Add(w.opts.MinInterval))
		}
	}
	return next
}

func inputsOf(info ClusterInfo, key string, stats *limiter.Stats) inputs {
	in := inputs{info: info}
	in.info.LastProbeTime = time.Time{}
	if stats != nil {
		in.waiting = stats.WaitingByCluster[key]
		in.throttled, in.throttledKnown = stats.ThrottledByCluster[key]
	}
	return in
}

// forgetUnregistered drops the entries of clusters no longer registered.
func forgetUnregistered[V any](keys map[string]bool, m map[string]V) {
	for key := range m {
		if !keys[key] {
			delete(m, key)
		}
	}
}

func sameSet(a, b map[types.NamespacedName]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
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
