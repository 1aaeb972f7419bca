package fleet

import (
	"fmt"

	workloads "github.com/etcdfleet/etcdfleet/memberctl/workload"
	"github.com/etcdfleet/etcdfleet/test/bench"
)

// controllerTimes are, per reconciler, the histograms that split a
// granted member's latency into waiting for a worker (the workqueue's
// queue duration) and the reconcile itself: where the controllers' time
// goes under load, measured rather than guessed.
type controllerTimes map[string][2]bench.Buckets // controller → queued, reconciling

var timedControllers = []string{workloads.MemberController, workloads.ClusterController}

// queueTimes reads the histograms from every manager's /metrics.
func (ms *managers) queueTimes() controllerTimes {
	out := controllerTimes{}
	for _, c := range timedControllers {
		out[c] = [2]bench.Buckets{
			bench.ScrapeBuckets(ms.metrics, "workqueue_queue_duration_seconds", `name="`+c+`"`),
			bench.ScrapeBuckets(ms.metrics, "controller_runtime_reconcile_time_seconds", `controller="`+c+`"`),
		}
	}
	return out
}

// since is what was observed after before.
func (t controllerTimes) since(before controllerTimes) controllerTimes {
	out := controllerTimes{}
	for c, h := range t {
		out[c] = [2]bench.Buckets{h[0].Since(before[c][0]), h[1].Since(before[c][1])}
	}
	return out
}

func (t controllerTimes) lines() []string {
	var out []string
	for _, c := range timedControllers {
		h := t[c]
		out = append(out, fmt.Sprintf("%-12s queued p50 ≤ %gs p99 ≤ %gs (%.0f items); reconciling p50 ≤ %gs p99 ≤ %gs (%.0f reconciles)",
			c, h[0].Quantile(0.5), h[0].Quantile(0.99), h[0].Count(), h[1].Quantile(0.5), h[1].Quantile(0.99), h[1].Count()))
	}
	return out
}
