package fleet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etcdfleet/etcdfleet/test/bench"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/e2e/lincheck"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

// clientRate is each cluster's workload, in ops/s: low, so that the
// clients barely load the host whose heal time is measured, yet a write
// every ~0.2 s resolves the gap well below a second.
const clientRate = 8

// clients is the linearizability workload on every cluster's EtcdCluster,
// through port-forward, as a user of the workload cluster would see it.
type clients struct {
	etcd map[string]*e2eutil.Etcd
	runs map[string]*lincheck.Workload
}

func startClients(b *testing.B, ctx context.Context, f *sandbox.Fleet, ws []*workload) *clients {
	cs := &clients{etcd: map[string]*e2eutil.Etcd{}, runs: map[string]*lincheck.Workload{}}
	for _, w := range ws {
		e, err := lincheck.Dial(ctx, lincheck.Target{Config: f.Cluster(w.name).Config, Client: w.c, Namespace: ns, Cluster: name})
		if err != nil {
			b.Fatalf("%s: dial etcd: %v", w.name, err)
		}
		b.Cleanup(e.Close)
		cs.etcd[w.name] = e
		cs.runs[w.name] = lincheck.Run(e.Client, w.name, lincheck.Options{Rate: clientRate, MaxOps: 100000})
	}
	// A gap opens at the last write before the outage: without one, the
	// first write after the heal would start the count.
	if err := cs.waitWrites(ctx, ws, func(*workload) time.Time { return time.Time{} }); err != nil {
		b.Fatalf("clients before the reboot: %v", err)
	}
	return cs
}

// waitWrites waits until every cluster's clients took a write after since.
func (cs *clients) waitWrites(ctx context.Context, ws []*workload, since func(*workload) time.Time) error {
	// Five minutes: at 30 clusters the host runs at a load of 100 or more
	// after the bootstrap, and port-forwarded clients take minutes to get
	// their first write through; one minute was not enough.
	return bench.Poll(ctx, 100*time.Millisecond, 5*time.Minute, func(context.Context) (bool, string, error) {
		var waiting []string
		for _, w := range ws {
			if !cs.runs[w.name].WroteAfter(since(w)) {
				waiting = append(waiting, w.name)
			}
		}
		return len(waiting) == 0, "no write yet on " + strings.Join(waiting, ", "), nil
	})
}

// stop waits until every cluster took a write after it healed (closing the
// gap the outage opened), stops the clients and checks each history. It
// returns each cluster's longest gap between two successful writes.
func (cs *clients) stop(b *testing.B, ctx context.Context, ws []*workload) map[string]time.Duration {
	if err := cs.waitWrites(ctx, ws, func(w *workload) time.Time { return w.healed }); err != nil {
		b.Errorf("clients after the heal: %v", err)
	}
	gaps := map[string]time.Duration{}
	for _, w := range ws {
		r := lincheck.Check(cs.runs[w.name].Stop(), lincheck.OutputDir(), lincheck.DefaultCheckTimeout)
		if err := r.Err(); err != nil {
			b.Errorf("%s: %v", w.name, err)
		}
		gaps[w.name], _ = r.History.WriteGaps()
	}
	return gaps
}

// reportGaps prints and reports the client-visible unavailability: per
// cluster the longest time between two successful writes, p50 and max
// over clusters.
func reportGaps(b *testing.B, gaps map[string]time.Duration) {
	var all []time.Duration
	var per []string
	for _, w := range sortedKeys(gaps) {
		all = append(all, gaps[w])
		per = append(per, fmt.Sprintf("%s %.1fs", w, gaps[w].Seconds()))
	}
	p50, worst := bench.Percentile(all, 0.5), bench.Percentile(all, 1)
	b.ReportMetric(p50.Seconds(), "write-gap-p50-s")
	b.ReportMetric(worst.Seconds(), "write-gap-max-s")
	bench.Logf(b, `client-visible unavailability (per cluster, longest time between two successful writes of a %d ops/s client workload; every history linearizable unless reported above):
  p50 %.2f s, max %.2f s   (%s)`, clientRate, p50.Seconds(), worst.Seconds(), strings.Join(per, ", "))
}

func sortedKeys(m map[string]time.Duration) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
