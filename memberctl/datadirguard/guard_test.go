package datadirguard_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etcdfleet/etcdfleet/memberctl/datadirguard"
)

type podDirs struct{ data, marker, term string }

func newPodDirs(t *testing.T) podDirs {
	t.Helper()
	root := t.TempDir()
	d := podDirs{data: filepath.Join(root, "data"), marker: filepath.Join(root, "marker"), term: filepath.Join(root, "termination-log")}
	for _, dir := range []string{d.data, d.marker} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func (d podDirs) run() error {
	return datadirguard.Run(datadirguard.Config{DataDir: d.data, MarkerDir: d.marker, TerminationMessagePath: d.term,
		PodUID: "uid-1", Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }})
}

// etcdStarted stands for etcd creating its data, as it does on first start.
func (d podDirs) etcdStarted(t *testing.T) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(d.data, "member", "wal"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// powerLoss wipes the tmpfs and keeps the disk emptyDir.
func (d podDirs) powerLoss(t *testing.T) {
	t.Helper()
	if err := os.RemoveAll(d.data); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(d.data, 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestFirstStartWritesTheMarker(t *testing.T) {
	d := newPodDirs(t)
	if err := d.run(); err != nil {
		t.Fatalf("first start: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(d.marker, "started"))
	if err != nil {
		t.Fatalf("marker not written: %v", err)
	}
	if !strings.Contains(string(b), "uid-1") || !strings.Contains(string(b), "2026-01-02T03:04:05Z") {
		t.Fatalf("marker %q does not say which Pod started when", b)
	}
}

func TestNewSandboxWithDataPasses(t *testing.T) {
	d := newPodDirs(t)
	if err := d.run(); err != nil {
		t.Fatal(err)
	}
	d.etcdStarted(t)
	if err := d.run(); err != nil {
		t.Fatalf("a sandbox recreated over an intact tmpfs must start etcd: %v", err)
	}
	if _, err := os.Stat(d.term); err == nil {
		t.Fatal("no termination message expected when the data is there")
	}
}

func TestWipedDataDirAfterAStartIsLost(t *testing.T) {
	d := newPodDirs(t)
	if err := d.run(); err != nil {
		t.Fatal(err)
	}
	d.etcdStarted(t)
	d.powerLoss(t)
	err := d.run()
	if !errors.Is(err, datadirguard.ErrDataDirLost) {
		t.Fatalf("want ErrDataDirLost, got %v", err)
	}
	msg, rerr := os.ReadFile(d.term)
	if rerr != nil {
		t.Fatalf("termination message not written: %v", rerr)
	}
	if !strings.HasPrefix(string(msg), datadirguard.MessagePrefix+": ") || !strings.Contains(string(msg), "uid-1") {
		t.Fatalf("termination message %q", msg)
	}
}

func TestMissingDataDirIsLost(t *testing.T) {
	d := newPodDirs(t)
	if err := d.run(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(d.data); err != nil {
		t.Fatal(err)
	}
	if err := d.run(); !errors.Is(err, datadirguard.ErrDataDirLost) {
		t.Fatalf("want ErrDataDirLost, got %v", err)
	}
}

func TestMissingFlagsOrMarkerDirAreErrorsNotLoss(t *testing.T) {
	if err := datadirguard.Run(datadirguard.Config{DataDir: "/x"}); err == nil || errors.Is(err, datadirguard.ErrDataDirLost) {
		t.Fatalf("missing --marker-dir: %v", err)
	}
	d := newPodDirs(t)
	d.marker = filepath.Join(d.marker, "absent")
	if err := d.run(); err == nil || errors.Is(err, datadirguard.ErrDataDirLost) {
		t.Fatalf("unwritable marker dir: %v", err)
	}
}
