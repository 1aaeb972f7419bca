package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

// EnvInt reads a positive integer knob from the environment, or def.
func EnvInt(b testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// EnvInts reads a comma-separated list of positive integers from the
// environment variable name (def when unset), failing b on anything else.
func EnvInts(b testing.TB, name string, def []int) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("%s=%q: want positive integers separated by commas", name, v)
		}
		out = append(out, n)
	}
	return out
}

// QuietLogs silences controller-runtime's logger and klog unless
// BENCH_VERBOSE=1: a reboot makes the sandbox's port-forward server and
// the operator's etcd dials report every refused connection, which would
// bury the figures.
func QuietLogs() {
	if os.Getenv("BENCH_VERBOSE") == "1" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
		return
	}
	ctrl.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
}

// CRDDirs are the workload and management CRDs of the repository.
func CRDDirs() []string {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	return []string{filepath.Join(root, "config", "crd", "workload"), filepath.Join(root, "config", "crd", "management")}
}

// StartSandbox starts the named sandbox clusters and stops them (every
// process) when the benchmark ends, failed or not.
func StartSandbox(b testing.TB, ctx context.Context, names ...string) *sandbox.Fleet {
	b.Helper()
	start := time.Now()
	f, err := sandbox.Start(ctx, sandbox.Options{Clusters: names, CRDDirs: CRDDirs()})
	if err != nil {
		b.Fatalf("sandbox: %v", err)
	}
	b.Cleanup(func() {
		if err := f.Stop(); err != nil {
			b.Errorf("sandbox stop: %v", err)
		}
	})
	Logf(b, "sandbox: %d clusters up in %s (%s)", len(names), time.Since(start).Round(100*time.Millisecond), HostLoad())
	return f
}

// Poll calls cond every interval until it returns true or timeout passes;
// errors count as "not yet" (an apiserver can be briefly busy) and, like
// cond's explanation, end up in the timeout error.
func Poll(ctx context.Context, interval, timeout time.Duration, cond func(context.Context) (bool, string, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(interval)
	defer t.Stop()
	last := ""
	for {
		ok, why, err := cond(ctx)
		if ok && err == nil {
			return nil
		}
		// A round the timeout cut short says only that; the one before
		// says what was still missing.
		if cut := ctx.Err() != nil && last != ""; !cut && why != "" {
			last = why
		} else if !cut && err != nil {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not within %s: %s", timeout, last)
		case <-t.C:
		}
	}
}

// Percentile is the nearest-rank q-quantile of ds (q = 0 is the minimum,
// 1 the maximum); 0 if ds is empty.
func Percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// Ms is d in milliseconds, for ReportMetric.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Verdict is "meets goal" or "MISSES goal", for the summaries.
func Verdict(ok bool) string {
	if ok {
		return "meets goal"
	}
	return "MISSES goal"
}

// Logf prints one line (or an indented block) of a benchmark's report to
// stdout, prefixed by the benchmark's name. b.Logf is not used for it: the
// testing package keeps only the first 10 lines a benchmark logs.
func Logf(b testing.TB, format string, args ...any) {
	msg := strings.ReplaceAll(strings.TrimRight(fmt.Sprintf(format, args...), "\n"), "\n", "\n    ")
	fmt.Printf("%s: %s\n", b.Name(), msg)
}

// HostLoad is the 1-minute load average against the CPUs, for reports:
// the benchmarks time a shared 2-core machine, and a figure taken under
// someone else's load says so.
func HostLoad() string {
	out, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return fmt.Sprintf("load %s on %d CPUs", strings.Fields(string(out))[0], runtime.NumCPU())
}

// Settle waits d, or less if ctx ends.
func Settle(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// RSS is the resident set size of process pid (0: this process) from
// /proc, in bytes, or 0.
func RSS(pid int) float64 {
	path := "/proc/self/status"
	if pid != 0 {
		path = fmt.Sprintf("/proc/%d/status", pid)
	}
	return procKB(path, "VmRSS:")
}

// MemAvailable is the host's available memory (MemAvailable in
// /proc/meminfo), in bytes, or 0.
func MemAvailable() float64 { return procKB("/proc/meminfo", "MemAvailable:") }

// procKB reads the "key: N kB" line of a /proc file, in bytes, or 0.
func procKB(path, key string) float64 {
	out, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == key {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb * 1024
		}
	}
	return 0
}

// CPUSeconds is the user and system CPU time process pid has used so far
// (utime and stime of /proc/<pid>/stat), or 0 if it is gone.
func CPUSeconds(pid int) float64 {
	out, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name in parentheses may hold spaces; fields count from
	// after it, where state is field 3 and utime and stime are 14 and 15.
	f := strings.Fields(string(out[strings.LastIndexByte(string(out), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clockTicks
}

// clockTicks is USER_HZ, the unit of /proc's CPU times: 100 on every Linux
// architecture Go supports.
const clockTicks = 100
