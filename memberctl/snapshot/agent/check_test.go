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

// TestParseDrillResult: only what a drill writes is a result; the message
// comes from a Pod of the workload cluster and its revision ends up in
// RestoreVerified.
func TestParseDrillResult(t *testing.T) {
	if r, err := ParseDrillResult(`{"revision":51,"durationSeconds":0.7}`); err != nil || r.Revision != 51 || r.DurationSeconds != 0.7 {
		t.Errorf("a drill's result: %+v, %v", r, err)
	}
	for _, msg := range []string{CheckedMessage, `{"revision":0,"durationSeconds":1}`, `{"revision":-3,"durationSeconds":1}`,
		`{"revision":5,"durationSeconds":-1}`, `{"revision":"5"}`, ""} {
		if r, err := ParseDrillResult(msg); err == nil {
			t.Errorf("ParseDrillResult(%q) = %+v, want an error", msg, r)
		}
	}
}

// TestValidateCheckRefusesANegativeRevision: a drill's lower bound comes
// from a status a person may write; a negative one is no artifact's.
func TestValidateCheckRefusesANegativeRevision(t *testing.T) {
	cfg := Config{File: "/x", CheckSHA256: strings.Repeat("a", 64), CheckSize: 1, CheckRevision: -1}
	if err := ValidateCheck(cfg); err == nil {
		t.Error("a negative recorded revision passed")
	}
	cfg.CheckRevision = 0
	if err := ValidateCheck(cfg); err != nil {
		t.Errorf("a valid check: %v", err)
	}
}
