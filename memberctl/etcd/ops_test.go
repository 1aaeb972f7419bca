package etcd_test

import (
	"context"
	"testing"
	"time"

	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

// TestOneMemberCallsLeaveThePooledEndpoints: Status and Defragment dial the
// one member they name, so they must not narrow the cluster's pooled
// channel to that member, which would close its connections to the others.
func TestOneMemberCallsLeaveThePooledEndpoints(t *testing.T) {
	ops, pool, port := loopbackOps(t, "endpoints")
	self := "http://m0.etcd.test.svc:" + port
	all := []string{self, "http://m1.etcd.test.svc:" + port, "http://m2.etcd.test.svc:" + port}
	cluster := etcd.Target{Key: "endpoints", Endpoints: all}
	one := etcd.Target{Key: cluster.Key, Endpoints: []string{self}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var err error
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
