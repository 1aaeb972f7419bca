package restore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/restore"
	"github.com/etcdfleet/etcdfleet/test/etcdproc"
)

func client(t *testing.T, url string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// until retries f while etcd starts (it is up within seconds).
func until(t *testing.T, f func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		err := f(ctx)
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRestoreBringsEveryKeyBackUnderANewClusterID: a snapshot the agent
// stored, restored into a new member's data dir, serves every key, and the
// restored cluster has a new ID.
func TestRestoreBringsEveryKeyBackUnderANewClusterID(t *testing.T) {
	src := etcdproc.Start(t, filepath.Join(t.TempDir(), "data"), "old", "old-token")
	old := client(t, src.ClientURL)
	const keys = 500
	for i := range keys {
		until(t, func(ctx context.Context) error {
			_, err := old.Put(ctx, fmt.Sprintf("k%04d", i), strings.Repeat("v", 100))
			return err
		})
	}
	oldStatus, err := old.Status(context.Background(), src.ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "snap.db")
	res, err := agent.Run(context.Background(), agent.Config{Endpoints: []string{src.ClientURL}, File: file})
	if err != nil {
		t.Fatal(err)
	}

	dst := etcdproc.Reserve(t, "new")
	dataDir := filepath.Join(t.TempDir(), "data")
	cfg := restore.Config{File: file, SHA256: res.SHA256, DataDir: dataDir, Name: "new",
		PeerURLs: []string{dst.PeerURL}, InitialCluster: dst.InitialCluster, InitialClusterToken: "new-token"}
	if err := restore.Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if err := restore.Run(context.Background(), cfg); !errors.Is(err, restore.ErrAlreadyRestored) {
		t.Errorf("second restore into the same data dir: %v, want ErrAlreadyRestored", err)
	}
	etcdproc.StartAt(t, dst, dataDir, "new", "new-token")
	restored := client(t, dst.ClientURL)
	var got *clientv3.GetResponse
	until(t, func(ctx context.Context) (err error) {
		got, err = restored.Get(ctx, "k", clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err
	})
	if got.Count != keys {
		t.Errorf("restored cluster has %d keys, want %d", got.Count, keys)
	}
	if got.Header.ClusterId == oldStatus.Header.ClusterId {
		t.Errorf("restored cluster kept the old cluster ID %x", got.Header.ClusterId)
	}
}

// TestRestoreRefusesAnotherSnapshot: a sha256 that is not the file's stops
// the restore before anything is written.
func TestRestoreRefusesAnotherSnapshot(t *testing.T) {
	src := etcdproc.Start(t, filepath.Join(t.TempDir(), "data"), "old", "old-token")
	file := filepath.Join(t.TempDir(), "snap.db")
	if _, err := agent.Run(context.Background(), agent.Config{Endpoints: []string{src.ClientURL}, File: file}); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(t.TempDir(), "data")
	err := restore.Run(context.Background(), restore.Config{File: file, SHA256: strings.Repeat("0", 64), DataDir: dataDir,
		Name: "new", PeerURLs: []string{"http://127.0.0.1:1"}, InitialCluster: "new=http://127.0.0.1:1", InitialClusterToken: "t"})
	if err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("err = %v, want a sha256 mismatch", err)
	}
	if matches, _ := filepath.Glob(filepath.Join(dataDir, "*")); len(matches) > 0 {
		t.Errorf("data dir written after a refused restore: %v", matches)
	}
}
