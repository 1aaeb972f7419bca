package operator

import (
	"context"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"
)

// Defaults of the options that keep one workload cluster from slowing the
// others down (Options.WorkersPerCluster and ReconcileTimeout,
// NewClientWithTimeout). A configuration layer shows them as they are.
const (
	// DefaultFleetWorkers is each controller's workers for a whole fleet.
	// A reconcile waits on etcd and the workload apiserver far more than it
	// computes (under a fleet heal on 2 cores: p50 0.2-0.6 s, p99 4 s), so
	// workers are cheap and a queue is not: with 8, a fleet reboot of 30
	// members queued the granted members' wake-ups for 1-10 s behind the
	// others' reconciles, and grant → old Pod deleted took p99 4.2 s;
	// with 32 the queue wait fell to microseconds and that step to p99
	// 1.2 s (make bench, docs/performance.md), so the limiter's tokens are
	// spent when granted.
	DefaultFleetWorkers = 32
	// DefaultWorkersPerCluster is an eighth of DefaultFleetWorkers: a hung
	// cluster leaves the rest to the rest of the fleet, and a healthy one
	// still reconciles 4 members at once, far more than the fleet-wide
	// replacement rate ever asks of it.
	DefaultWorkersPerCluster = 4
	// DefaultReconcileTimeout is well above the longest healthy reconcile:
	// a few API calls (ms each, DefaultRequestTimeout at worst) and etcd
	// calls of at most 10 s each (memberctl/etcd), a few in a row when
	// members are down.
	DefaultReconcileTimeout = time.Minute
	// DefaultRequestTimeout bounds one API call of the reconcilers. A
	// healthy apiserver answers in milliseconds and its own slow writes
	// fail within seconds; waiting longer only keeps a worker from other
	// clusters while a hung apiserver never answers (client-go's own bound
	// is the 30 s rest.Config.Timeout plus HTTP/2 health checks of 45 s).
	DefaultRequestTimeout = 10 * time.Second
)

// capRetry is when a request that found its cluster's workers all busy is
// looked at again if its wake-up was lost (the wake channel was full).
const capRetry = 5 * time.Second

// workerCaps caps one controller's reconciles in flight per workload
// cluster, so that a cluster whose apiserver hangs holds at most max of the
// controller's workers, whatever number of its requests are queued. A
// request that finds its cluster's workers all busy returns at once and waits in
// a FIFO of its cluster; the next release wakes the oldest one through the
// controller's wake source, so a busy but healthy cluster loses no time.
type workerCaps struct {
	max  int
	wake chan event.TypedGenericEvent[mcreconcile.Request]

	mu      sync.Mutex
	busy    map[multicluster.ClusterName]int
	waiting map[multicluster.ClusterName][]mcreconcile.Request
}

func newWorkerCaps(max int) *workerCaps {
	return &workerCaps{max: max, wake: make(chan event.TypedGenericEvent[mcreconcile.Request], 1024),
		busy: map[multicluster.ClusterName]int{}, waiting: map[multicluster.ClusterName][]mcreconcile.Request{}}
}

// acquire takes a worker of req's cluster, or queues req for a wake-up.
func (s *workerCaps) acquire(req mcreconcile.Request) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := req.ClusterName
	if s.busy[c] < s.max {
		s.busy[c]++
		return true
	}
	if !slices.Contains(s.waiting[c], req) {
		s.waiting[c] = append(s.waiting[c], req)
	}
	return false
}

// release frees a worker of cluster c and wakes its oldest waiting request.
func (s *workerCaps) release(c multicluster.ClusterName) {
	s.mu.Lock()
	if s.busy[c]--; s.busy[c] <= 0 {
		delete(s.busy, c)
	}
	q := s.waiting[c]
	if len(q) == 0 {
		s.mu.Unlock()
		return
	}
	next := q[0]
	if len(q) == 1 {
		delete(s.waiting, c)
	} else {
		s.waiting[c] = q[1:]
	}
	s.mu.Unlock()
	select { // never block a worker: capRetry is the fallback
	case s.wake <- event.TypedGenericEvent[mcreconcile.Request]{Object: next}:
	default:
	}
}

// wrap runs r only on a free worker of the request's cluster.
func (s *workerCaps) wrap(r mcreconcile.Func) mcreconcile.Func {
	return func(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
		if !s.acquire(req) {
			return ctrl.Result{RequeueAfter: capRetry}, nil
		}
		defer s.release(req.ClusterName)
		return r(ctx, req)
	}
}

// source requeues the requests release wakes.
func (s *workerCaps) source() source.TypedSource[mcreconcile.Request] {
	return source.TypedChannel(s.wake, handler.TypedFuncs[mcreconcile.Request, mcreconcile.Request]{
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[mcreconcile.Request], q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
			q.Add(e.Object)
		},
	})
}

// NewClientWithTimeout returns a NewClient for cluster.Options whose API
// calls each end after timeout (DefaultRequestTimeout when 0). Only the
// client's own HTTP client gets the timeout: the cache's watches run
// longer by design (rest.Config.Timeout would cut every request at it,
// watches included). Both clients share one transport
// (client-go caches it by TLS configuration), so no connection is added.
func NewClientWithTimeout(timeout time.Duration) client.NewClientFunc {
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	return func(cfg *rest.Config, o client.Options) (client.Client, error) {
		cfg = rest.CopyConfig(cfg)
		cfg.Timeout = timeout
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return nil, err
		}
		o.HTTPClient = hc
		return client.New(cfg, o)
	}
}
