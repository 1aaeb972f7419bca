package agent_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
)

// A member without quorum (the survivor of a lost majority) can still be
// snapshotted with SingleMember, and cannot without it: its revision is
// read serializably from it alone.
func TestSingleMemberSnapshotWithoutQuorum(t *testing.T) {
	endpoint := startEtcd(t)
	rev := fill(t, endpoint, 2)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	// A second voter that never starts: the member is one of two, and
	// loses its leadership once check-quorum notices (an election timeout).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cli.MemberAdd(ctx, []string{"http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	for {
		rctx, rcancel := context.WithTimeout(ctx, time.Second)
		_, err := cli.Get(rctx, "k000")
		rcancel()
		if err != nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the member kept quorum")
		}
		time.Sleep(200 * time.Millisecond)
	}

	cfg := agent.Config{Endpoints: []string{endpoint}, File: filepath.Join(t.TempDir(), "linearizable.db"), Timeout: 5 * time.Second}
	if _, err := agent.Run(context.Background(), cfg); err == nil {
		t.Fatal("a snapshot with a linearizable revision read succeeded without quorum")
	}
	cfg.File, cfg.SingleMember = filepath.Join(t.TempDir(), "survivor.db"), true
	res, err := agent.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("single-member snapshot without quorum: %v", err)
	}
	if res.Revision < rev {
		t.Errorf("snapshot revision %d, want at least %d", res.Revision, rev)
	}
}
