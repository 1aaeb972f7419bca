package etcd_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdaccess"
	"github.com/etcdfleet/etcdfleet/test/etcdproc"
)

// loopbackOps starts one real etcd, member m0, and returns Ops and their
// pool, which reach it whichever Pod is named, and its client port.
func loopbackOps(t *testing.T, token string, args ...string) (*etcd.Ops, *etcdaccess.ClientPool, string) {
	t.Helper()
	m := etcdproc.Start(t, filepath.Join(t.TempDir(), "data"), "m0", token, args...)
	u, err := url.Parse(m.ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	pool := etcdaccess.NewClientPool(loopback{addr: u.Host}, zap.NewNop())
	t.Cleanup(func() { _ = pool.Close() })
	return &etcd.Ops{Pool: pool}, pool, u.Port()
}

// loopback dials one etcd on loopback whatever Pod is asked for.
type loopback struct{ addr string }

func (l loopback) DialPod(ctx context.Context, _, _ string, _ int) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", l.addr)
}

// TestDisarmNoSpaceLetsWritesThroughAgain runs a real etcd over a small
// quota into its NOSPACE alarm. Freeing the space (delete, compact,
// defragment) is not enough: writes are refused until DisarmNoSpace
// clears the alarm, which it counts.
func TestDisarmNoSpaceLetsWritesThroughAgain(t *testing.T) {
	const quota = 2 << 20
	ops, pool, port := loopbackOps(t, "nospace", "--quota-backend-bytes="+strconv.Itoa(quota))
	endpoint := "http://m0.etcd.test.svc:" + port
	target := etcd.Target{Key: "nospace", Endpoints: []string{endpoint}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := pool.Get(ctx, target.Key, target.Endpoints, nil)
	if err != nil {
		t.Fatal(err)
	}

	value := strings.Repeat("v", 64<<10)
	put := func(key string) error {
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := cli.Put(c, key, value)
		return err
	}
	for ctx.Err() == nil { // etcd starts within seconds
		if _, err := cli.Get(ctx, "up"); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// etcd compares the backend's size with the quota, and the size grows
	// only as batches are committed (every 100 ms): a fast writer can pass
	// twice the quota before the first refusal (CI saw it under load), so
	// write up to eight times the quota.
	var full error
	for i := 0; i < 8*quota/len(value) && full == nil; i++ {
		full = put(fmt.Sprintf("k%04d", i))
	}
	if !isNoSpace(full) {
		t.Fatalf("writing eight times the quota: got %v, want etcd's NOSPACE refusal", full)
	}

	del, err := cli.Delete(ctx, "k", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, del.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	if err := ops.Defragment(ctx, target, endpoint); err != nil {
		t.Fatal(err)
	}
	if err := put("after-defrag"); !isNoSpace(err) {
		t.Fatalf("a write after the defragmentation, before the disarm: got %v, want NOSPACE (the alarm outlives the space)", err)
	}

	n, err := ops.DisarmNoSpace(ctx, target)
	if err != nil || n != 1 {
		t.Fatalf("DisarmNoSpace: %d alarms, %v; want 1, nil", n, err)
	}
	if err := put("after-disarm"); err != nil {
		t.Fatalf("a write after the disarm: %v", err)
	}
	if n, err := ops.DisarmNoSpace(ctx, target); err != nil || n != 0 {
		t.Fatalf("DisarmNoSpace with no alarm: %d, %v; want 0, nil", n, err)
	}
}

func isNoSpace(err error) bool {
	return err != nil && strings.Contains(err.Error(), "database space exceeded")
}
