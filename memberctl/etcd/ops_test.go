package etcd_test

import (
	"context"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdaccess"
	"github.com/etcdfleet/etcdfleet/test/etcdproc"
)

// TestOneMemberCallsLeaveThePooledEndpoints: Status and Defragment dial the
// one member they name, so they must not narrow the cluster's pooled
// channel to that member, which would close its connections to the others.
func TestOneMemberCallsLeaveThePooledEndpoints(t *testing.T) {
	m := etcdproc.Start(t, filepath.Join(t.TempDir(), "data"), "m0", "endpoints")
	u, err := url.Parse(m.ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	// The loopback dialer reaches the one etcd whichever Pod is named.
	pool := etcdaccess.NewClientPool(loopback{addr: u.Host}, zap.NewNop())
	t.Cleanup(func() { _ = pool.Close() })
	ops := &etcd.Ops{Pool: pool}
	self := "http://m0.etcd.test.svc:" + u.Port()
	all := []string{self, "http://m1.etcd.test.svc:" + u.Port(), "http://m2.etcd.test.svc:" + u.Port()}
	cluster := etcd.Target{Key: "endpoints", Endpoints: all}
	one := etcd.Target{Key: cluster.Key, Endpoints: []string{self}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	for ctx.Err() == nil { // etcd starts within seconds
		if _, _, err = ops.MemberList(ctx, cluster); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Status(ctx, one, self); err != nil {
		t.Fatal(err)
	}
	if err := ops.Defragment(ctx, one, self); err != nil {
		t.Fatal(err)
	}
	cli, err := pool.Borrow(ctx, cluster.Key, all, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cli.Endpoints(); len(got) != len(all) {
		t.Fatalf("the pooled client's endpoints after Status and Defragment of one member: %v, want the %d that MemberList set", got, len(all))
	}
}
