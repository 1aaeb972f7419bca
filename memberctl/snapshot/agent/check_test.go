package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheck: a stored snapshot passes only as its EtcdSnapshot recorded
// it; a missing or replaced one fails, and the termination message says
// which.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.db")
	good := etcdSnapshot(strings.Repeat("bolt page ", 1000))
	if err := os.WriteFile(file, good, 0o644); err != nil {
		t.Fatal(err)
	}
	want := resultOf(good)
	msgFile := filepath.Join(dir, "message")
	run := func(cfg Config) (string, error) {
		cfg.TerminationMessagePath = msgFile
		err := Check(context.Background(), cfg)
		b, _ := os.ReadFile(msgFile)
		return string(b), err
	}
	if msg, err := run(Config{File: file, CheckSHA256: want.SHA256, CheckSize: want.SizeBytes}); err != nil || msg != CheckedMessage {
		t.Errorf("intact snapshot: %q, %v", msg, err)
	}
	other := resultOf(etcdSnapshot("another cluster's snapshot"))
	if msg, err := run(Config{File: file, CheckSHA256: other.SHA256, CheckSize: want.SizeBytes}); err == nil || !strings.Contains(msg, "differs") {
		t.Errorf("replaced snapshot: %q, %v", msg, err)
	}
	if msg, err := run(Config{File: filepath.Join(dir, "gone.db"), CheckSHA256: want.SHA256, CheckSize: want.SizeBytes}); err == nil || !strings.Contains(msg, "no such file") {
		t.Errorf("missing snapshot: %q, %v", msg, err)
	}
	if _, err := run(Config{File: file, CheckSHA256: "AB", CheckSize: want.SizeBytes}); err == nil {
		t.Error("a recorded sha256 that is not one passed")
	}
}
