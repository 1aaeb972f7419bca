package restore_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/restore"
	"github.com/etcdfleet/etcdfleet/test/etcdproc"
)

// TestDrillServesTheSnapshotsRevision: a stored snapshot restored by a
// drill is served by a throwaway etcd at the source's revision; the drill
// reports it, and leaves nothing behind in its directory.
func TestDrillServesTheSnapshotsRevision(t *testing.T) {
	src := etcdproc.Start(t, filepath.Join(t.TempDir(), "data"), "old", "old-token")
	cli := client(t, src.ClientURL)
	for range 20 {
		until(t, func(ctx context.Context) error {
			_, err := cli.Put(ctx, "k", strings.Repeat("v", 100))
			return err
		})
	}
	before, err := cli.Get(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "snap.db")
	res, err := agent.Run(context.Background(), agent.Config{Endpoints: []string{src.ClientURL}, File: file})
	if err != nil {
		t.Fatal(err)
	}
	dir, msg := t.TempDir(), filepath.Join(t.TempDir(), "msg")
	cfg := agent.Config{File: file, CheckSHA256: res.SHA256, CheckSize: res.SizeBytes, CheckRevision: res.Revision,
		DrillDir: dir, TerminationMessagePath: msg}
	if err := restore.Drill(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(msg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := agent.ParseDrillResult(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if got.Revision != before.Header.Revision {
		t.Errorf("drill read revision %d, want the source's %d", got.Revision, before.Header.Revision)
	}
	if got.DurationSeconds <= 0 {
		t.Errorf("drill duration %v", got.DurationSeconds)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) > 0 {
		t.Errorf("drill left %v", left)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("drill left %v", left)
	}

	// The restored etcd must serve at least the revision recorded when the
	// snapshot was taken: one that serves less holds an older keyspace.
	cfg.CheckRevision = got.Revision + 1
	if err := restore.Drill(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "below the") {
		t.Errorf("drill with a recorded revision above the snapshot's: %v, want a refusal", err)
	}
}

// TestDrillRefusesAStoredCopyThatChanged: a snapshot whose stored bytes are
// no longer what was recorded fails the drill before any restore, saying
// why in the termination message.
func TestDrillRefusesAStoredCopyThatChanged(t *testing.T) {
	src := etcdproc.Start(t, filepath.Join(t.TempDir(), "data"), "old", "old-token")
	file := filepath.Join(t.TempDir(), "snap.db")
	res, err := agent.Run(context.Background(), agent.Config{Endpoints: []string{src.ClientURL}, File: file})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(strings.Repeat("x", int(res.SizeBytes))), 0o600); err != nil {
		t.Fatal(err)
	}
	msg := filepath.Join(t.TempDir(), "msg")
	err = restore.Drill(context.Background(), agent.Config{File: file, CheckSHA256: res.SHA256, CheckSize: res.SizeBytes,
		DrillDir: t.TempDir(), TerminationMessagePath: msg})
	if err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("drill of a replaced copy: %v, want a sha256 mismatch", err)
	}
	if b, _ := os.ReadFile(msg); !strings.Contains(string(b), "sha256") {
		t.Errorf("termination message %q does not say why", b)
	}
}
