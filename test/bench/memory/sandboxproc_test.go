package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etcdfleet/etcdfleet/test/bench"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
	"github.com/etcdfleet/etcdfleet/test/sandbox/proc"
)

// The sandbox process is this test binary with these variables set: the
// directory to report into and the clusters to start.
const (
	envSandboxDir      = "ETCDFLEET_BENCH_SANDBOX_DIR"
	envSandboxClusters = "ETCDFLEET_BENCH_SANDBOX_CLUSTERS"
	readyFile          = "ready"
	// envProfileDir asks for heap and goroutine profiles (see measure).
	envProfileDir = "BENCH_MEMORY_PROFILE"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(envSandboxDir); dir != "" {
		os.Exit(runSandboxProcess(dir, strings.Split(os.Getenv(envSandboxClusters), ",")))
	}
	if os.Getenv(envProfileDir) != "" {
		// Sample every 4 KiB rather than 512 KiB, so a profile diff shows
		// per-cluster costs; set before the manager allocates anything.
		runtime.MemProfileRate = 4096
	}
	os.Exit(m.Run())
}

// runSandboxProcess is the child: it starts the clusters, writes each
// one's kubeconfig to dir/<name>.kubeconfig and then dir/ready, and stops
// every cluster on SIGTERM. If the benchmark process dies instead, the
// kernel kills this one (Pdeathsig, package proc) and its own children
// with it.
func runSandboxProcess(dir string, names []string) int {
	bench.QuietLogs()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	f, err := sandbox.Start(ctx, sandbox.Options{Clusters: names, CRDDirs: bench.CRDDirs(), Dir: filepath.Join(dir, "sandbox")})
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox:", err)
		return 1
	}
	err = writeKubeconfigs(dir, f)
	if err == nil {
		<-ctx.Done()
	}
	if serr := f.Stop(); serr != nil {
		err = errors.Join(err, serr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox:", err)
		return 1
	}
	return 0
}

func writeKubeconfigs(dir string, f *sandbox.Fleet) error {
	for _, c := range f.Clusters() {
		if err := os.WriteFile(filepath.Join(dir, c.Name+".kubeconfig"), c.Kubeconfig, 0o600); err != nil {
			return err
		}
	}
	// Written last and renamed into place: its presence means every
	// kubeconfig is complete.
	tmp := filepath.Join(dir, readyFile+".tmp")
	if err := os.WriteFile(tmp, nil, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, readyFile))
}

// startSandboxProcess runs the named clusters in a child process and
// returns their kubeconfigs by name. The child is stopped, and waited for,
// when the benchmark ends, failed or not.
func startSandboxProcess(b *testing.B, names ...string) map[string][]byte {
	b.Helper()
	start := time.Now()
	dir := b.TempDir()
	logPath := filepath.Join(dir, "sandbox.log")
	log, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), envSandboxDir+"="+dir, envSandboxClusters+"="+strings.Join(names, ","))
	cmd.Stdout, cmd.Stderr = log, log
	p, err := proc.Start(cmd)
	if err != nil {
		b.Fatalf("sandbox process: %v", err)
	}
	b.Cleanup(func() {
		// Stopping several apiservers and their etcd takes seconds.
		p.Stop(2 * time.Minute)
		if code := p.ExitCode(); code != 0 {
			b.Errorf("sandbox process exited with %d:\n%s", code, tail(logPath))
		}
	})
	deadline := time.After(5 * time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(dir, readyFile)); err == nil {
			break
		}
		select {
		case <-p.Done():
			b.Fatalf("sandbox process exited before it was ready (%v):\n%s", p.Err(), tail(logPath))
		case <-deadline:
			b.Fatalf("sandbox process not ready within 5 min:\n%s", tail(logPath))
		case <-time.After(200 * time.Millisecond):
		}
	}
	out := map[string][]byte{}
	for _, n := range names {
		kc, err := os.ReadFile(filepath.Join(dir, n+".kubeconfig"))
		if err != nil {
			b.Fatal(err)
		}
		out[n] = kc
	}
	bench.Logf(b, "sandbox: %d clusters up in a separate process in %s", len(names), time.Since(start).Round(100*time.Millisecond))
	return out
}

func tail(path string) string {
	out, _ := os.ReadFile(path)
	if len(out) > 4000 {
		out = out[len(out)-4000:]
	}
	return string(out)
}
