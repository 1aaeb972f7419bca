package lincheck

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestWorkloadOnARealEtcdThatRestartsChecksOut runs the workload on one
// real etcd that is killed and restarted mid-run: what the clients record
// must check out, with responses on both sides of the outage. The model
// and the recording agree with etcd, so a violation in an e2e spec is
// etcdfleet's, not the checker's.
func TestWorkloadOnARealEtcdThatRestartsChecksOut(t *testing.T) {
	e := startEtcd(t)
	w := Run(e.cli, "single", Options{Rate: 200, OpTimeout: 500 * time.Millisecond})
	time.Sleep(1500 * time.Millisecond)
	e.restart(t, 500*time.Millisecond)
	time.Sleep(1500 * time.Millisecond)
	h := w.Stop()
	r := Check(h, t.TempDir(), time.Minute)
	t.Log(r.Summary())
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	var before, after int
	for _, o := range h.Ops {
		if o.Output.Outcome == OK && o.Return.Before(e.restartedAt) {
			before++
		} else if o.Output.Outcome == OK {
			after++
		}
	}
	if before == 0 || after == 0 {
		t.Fatalf("want responses before and after the restart, have %d and %d", before, after)
	}
}

// TestWorkloadOnAnEtcdThatLosesWritesFails runs the workload through a KV
// that acknowledges some puts it sent to another key, as a cluster that
// loses acknowledged writes would look to its clients: the check fails.
func TestWorkloadOnAnEtcdThatLosesWritesFails(t *testing.T) {
	e := startEtcd(t)
	w := Run(&losingKV{KV: e.cli}, "lossy", Options{Rate: 200})
	time.Sleep(time.Second)
	r := Check(w.Stop(), t.TempDir(), time.Minute)
	if r.Err() == nil {
		t.Fatalf("lost writes went unnoticed: %s", r.Summary())
	}
	if r.Visualization == "" {
		t.Fatal("no visualization written")
	}
	t.Logf("rejected as expected:\n%v", r.Err())
}

// losingKV sends every third put to a key nobody reads.
type losingKV struct {
	clientv3.KV
	puts atomic.Int64
}

func (l *losingKV) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	if l.puts.Add(1)%3 == 0 {
		key += "/lost"
	}
	return l.KV.Put(ctx, key, val, opts...)
}

// etcdProcess is one real etcd (from KUBEBUILDER_ASSETS) on loopback.
type etcdProcess struct {
	cli         *clientv3.Client
	cmd         *exec.Cmd
	start       func() *exec.Cmd
	restartedAt time.Time
}

func startEtcd(t *testing.T) *etcdProcess {
	bin := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "etcd")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no etcd binary (set KUBEBUILDER_ASSETS): %v", err)
	}
	dir, client, peer := t.TempDir(), freeURL(t), freeURL(t)
	e := &etcdProcess{}
	e.start = func() *exec.Cmd {
		cmd := exec.Command(bin, "--data-dir", dir, "--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "default="+peer)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	e.cmd = e.start()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{client}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	e.cli = cli
	e.waitServing(t)
	return e
}

// restart kills etcd, waits outage, starts it again on the same data and
// waits until it serves.
func (e *etcdProcess) restart(t *testing.T, outage time.Duration) {
	_ = e.cmd.Process.Kill()
	_ = e.cmd.Wait()
	time.Sleep(outage)
	e.cmd = e.start()
	e.waitServing(t)
	e.restartedAt = time.Now()
}

// freeURL returns a loopback URL on a port that was free a moment ago.
func freeURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprintf("http://%s", l.Addr())
}

func (e *etcdProcess) waitServing(t *testing.T) {
	for range 100 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := e.cli.Get(ctx, "ping")
		cancel()
		if err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("etcd did not come back")
}
