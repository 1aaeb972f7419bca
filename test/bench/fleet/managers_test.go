package fleet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etcdfleet/etcdfleet/fleet/settings"
	"github.com/etcdfleet/etcdfleet/test/bench"
	"github.com/etcdfleet/etcdfleet/test/managerproc"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

// managers are the etcdfleet-manager processes of one run: one with the
// default configuration, or BENCH_REPLICAS with --shard. Processes rather
// than the manager in this process: three managers cannot share one
// process, and either way each grant's limiter wait is read from the
// manager's log (managerproc.Grants).
type managers struct {
	procs   []*managerproc.Process
	metrics []string // each process's /metrics, plain HTTP
}

// startManagers runs n manager processes against the management cluster
// and stops them (SIGKILL: nothing is measured after) before the sandbox.
// More than one run sharded, under IDs that split clusters unevenly
// (unevenReplicaIDs).
func startManagers(b *testing.B, ctx context.Context, f *sandbox.Fleet, cfg settings.Config, n int, clusters []string) *managers {
	dir := b.TempDir()
	bin, err := managerproc.Build(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	kc := filepath.Join(dir, "mgmt.kubeconfig")
	if err := os.WriteFile(kc, f.Cluster("mgmt").Kubeconfig, 0o600); err != nil {
		b.Fatal(err)
	}
	ms := &managers{}
	ids := []string{"manager"}
	if n > 1 {
		var owned map[string][]string
		if ids, owned, err = unevenReplicaIDs(n, clusters); err != nil {
			b.Fatal(err)
		}
		var split []string
		for _, id := range ids {
			split = append(split, fmt.Sprintf("%s owns %d", id, len(owned[id])))
		}
		bench.Logf(b, "sharded over %d replicas, unevenly: %s", n, strings.Join(split, ", "))
	}
	for _, name := range ids {
		addr, err := managerproc.FreeLoopbackAddr()
		if err != nil {
			b.Fatal(err)
		}
		args := []string{"--kubeconfig", kc, "--namespace", cfg.Namespace, "--metrics-bind-address", addr,
			"--metrics-secure=false", "--health-probe-bind-address", "0", managerproc.TimeEncodingArg,
			// The process reads its settings from flags, not cfg: without
			// this it refuses the sandbox admin as Unconstrained and the
			// bootstrap never ends.
			fmt.Sprintf("--allow-unconstrained=%t", cfg.AllowUnconstrained),
			// One replica runs as the bench always did, without leader
			// election; sharded ones elect the leader of the singletons.
			fmt.Sprintf("--leader-elect=%t", n > 1)}
		if n > 1 {
			args = append(args, "--shard", "--shard-replica-id="+name)
		}
		// BENCH_MANAGER_ARGS adds flags, for comparing settings under the
		// same load (for example --workers=32).
		args = append(args, strings.Fields(os.Getenv("BENCH_MANAGER_ARGS"))...)
		p, err := managerproc.Start(bin, managerproc.Options{Name: name, Args: args, Log: verboseLog(name)})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(p.Kill)
		ms.procs, ms.metrics = append(ms.procs, p), append(ms.metrics, "http://"+addr+"/metrics")
	}
	return ms
}

// verboseLog passes a process's log to stderr with BENCH_VERBOSE=1.
func verboseLog(name string) func(string) {
	if os.Getenv("BENCH_VERBOSE") != "1" {
		return nil
	}
	return func(line string) { fmt.Fprint(os.Stderr, "["+name+"] "+line) }
}

// engagedOnce is true once every workload cluster is engaged by exactly
// one process.
func (ms *managers) engagedOnce(ws []*workload) func(context.Context) (bool, string, error) {
	return func(context.Context) (bool, string, error) {
		owners := map[string]int{}
		for _, p := range ms.procs {
			for _, c := range p.Current() {
				owners[c]++
			}
		}
		for _, w := range ws {
			if owners[w.name] != 1 {
				return false, fmt.Sprintf("cluster %s engaged by %d managers", w.name, owners[w.name]), nil
			}
		}
		return true, "", nil
	}
}

// waitBucketsFull waits until the limiters' tokens, summed over the
// processes, stop growing: the bound assumes full buckets when the fleet
// reboots, and each bucket starts empty (StartEmpty) and fills at its
// share of the rate.
func (ms *managers) waitBucketsFull(b *testing.B, ctx context.Context) float64 {
	last := -1.0
	var tokens float64
	err := bench.Poll(ctx, time.Second, 2*time.Minute, func(context.Context) (bool, string, error) {
		tokens = 0
		for _, url := range ms.metrics {
			tokens += bench.Scrape(url, "etcdfleet_limiter_tokens_available")
		}
		full := tokens > 0 && tokens == last
		last = tokens
		return full, fmt.Sprintf("limiters hold %.2f tokens, still filling", tokens), nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return tokens
}

// grants returns every process's grants.
func (ms *managers) grants() []managerproc.Grant {
	var out []managerproc.Grant
	for _, p := range ms.procs {
		out = append(out, p.Grants()...)
	}
	return out
}

// rss is the processes' resident memory, summed.
func (ms *managers) rss() float64 {
	var sum float64
	for _, p := range ms.procs {
		sum += bench.RSS(p.PID())
	}
	return sum
}
