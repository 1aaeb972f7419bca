package scale

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/etcdfleet/etcdfleet/test/bench"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

// BenchmarkLiteAPIServer measures what each knob of sandbox.LiteKnobSteps
// saves: for each step (cumulative), BENCH_LITE_APISERVERS (default 3)
// lite apiservers on one etcd, their median RSS after they settle.
func BenchmarkLiteAPIServer(b *testing.B) {
	bench.QuietLogs()
	ctx := context.Background()
	k := bench.EnvInt(b, "BENCH_LITE_APISERVERS", 3)
	names := make([]string, k)
	for i := range names {
		names[i] = fmt.Sprintf("k%d", i)
	}
	var base float64
	for _, step := range sandbox.LiteKnobSteps() {
		rss, idle := liteRSS(b, ctx, names, step.Knobs)
		if base == 0 {
			base = rss
		}
		bench.Logf(b, "%-75s median RSS %4.0f MiB per apiserver (%+.0f%% vs the first; %s)", step.Name, rss/mib, (rss/base-1)*100, bench.HostLoad())
		bench.Logf(b, "%-75s with no client: %.1f requests a minute per apiserver (watches %.1f)", "", idle.all, idle.watches)
	}
	b.ReportMetric(0, "ns/op")
}

// liteRSS starts a lite fleet with knobs, lets it settle (the post-start
// hooks' work and the first GCs), and returns its apiservers' median RSS
// and the requests they serve with no client but the bench's scrapes: the
// baseline under the request rates BenchmarkScale reports.
func liteRSS(b *testing.B, ctx context.Context, names []string, knobs sandbox.LiteKnobs) (float64, requestRates) {
	lf, err := sandbox.StartLite(ctx, sandbox.LiteOptions{Clusters: names, CRDDirs: bench.CRDDirs(), Knobs: &knobs, Log: apiserverLog()})
	if err != nil {
		b.Fatalf("lite sandbox: %v", err)
	}
	defer func() { _ = lf.Stop() }()
	bench.Settle(ctx, 20*time.Second)
	var rss []float64
	for _, c := range lf.Clusters {
		rss = append(rss, bench.RSS(c.PID))
	}
	slices.Sort(rss)
	return rss[len(rss)/2], requestsPerMinute(b, ctx, lf.Clusters, 30*time.Second)
}

// apiserverLog is where the apiservers' output goes: stderr with
// BENCH_VERBOSE=1 (to see why one did not start), else nowhere.
func apiserverLog() io.Writer {
	if os.Getenv("BENCH_VERBOSE") == "1" {
		return os.Stderr
	}
	return nil
}
