package datadirguard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// MessagePrefix starts the termination message of a guard that found the
// data directory lost; DataDirLost looks for it.
const MessagePrefix = "DataDirLost"

// markerFile is the file, on the disk emptyDir, that records that this Pod
// started once already.
const markerFile = "started"

// maxMessage is the kubelet's cap on a termination message (4096 bytes).
const maxMessage = 4096

// Config is what one guard run checks.
type Config struct {
	// DataDir is the member's etcd data directory (on the tmpfs).
	DataDir string
	// MarkerDir is a directory on a disk emptyDir of the same Pod.
	MarkerDir string
	// TerminationMessagePath is where the kubelet reads the termination
	// message from (the container's terminationMessagePath); "" skips it.
	TerminationMessagePath string
	// PodUID is recorded in the marker, for people reading it.
	PodUID string
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// ErrDataDirLost is returned (wrapped) when the Pod started before but its
// data directory is now empty.
var ErrDataDirLost = errors.New(MessagePrefix)

// Run performs one check, on a new Pod sandbox:
//
//   - no marker: this is the Pod's first start; write the marker, return nil;
//   - marker and etcd data (member/): the tmpfs survived (a sandbox
//     recreated without a reboot); return nil;
//   - marker but no etcd data: the tmpfs was wiped under a Pod that ran
//     before; write the termination message and return ErrDataDirLost.
func Run(cfg Config) error {
	if cfg.DataDir == "" || cfg.MarkerDir == "" {
		return errors.New("datadir-guard: --data-dir and --marker-dir are required")
	}
	now := time.Now
	if cfg.Now != nil {
		now = cfg.Now
	}
	marker := filepath.Join(cfg.MarkerDir, markerFile)
	written, err := os.ReadFile(marker)
	if errors.Is(err, fs.ErrNotExist) {
		return writeMarker(marker, cfg.PodUID, now())
	}
	if err != nil {
		return fmt.Errorf("datadir-guard: read marker: %w", err)
	}
	hasData, err := hasEtcdData(cfg.DataDir)
	if err != nil {
		return fmt.Errorf("datadir-guard: inspect data dir: %w", err)
	}
	if hasData {
		return nil
	}
	msg := fmt.Sprintf("%s: data dir %s has no etcd data, but this Pod started before (%s); "+
		"its memory-backed volume was wiped (a node power loss or reboot), so the member must be replaced by a new member and never rejoin under its old ID",
		MessagePrefix, cfg.DataDir, strings.TrimSpace(string(written)))
	if cfg.TerminationMessagePath != "" {
		if err := os.WriteFile(cfg.TerminationMessagePath, []byte(truncate(msg, maxMessage)), 0o644); err != nil {
			return fmt.Errorf("%w (and the termination message could not be written: %v)", ErrDataDirLost, err)
		}
	}
	return fmt.Errorf("%w%s", ErrDataDirLost, strings.TrimPrefix(msg, MessagePrefix))
}

// writeMarker records the first start. It is synced so that a power loss
// right after it cannot leave the Pod running without it.
func writeMarker(path, podUID string, at time.Time) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("datadir-guard: write marker: %w", err)
	}
	_, err = fmt.Fprintf(f, "first started at %s by Pod UID %s\n", at.UTC().Format(time.RFC3339), orUnknown(podUID))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("datadir-guard: write marker: %w", err)
	}
	return nil
}

// hasEtcdData reports whether dir holds etcd's member/ directory, which etcd
// creates before it acknowledges anything.
func hasEtcdData(dir string) (bool, error) {
	st, err := os.Stat(filepath.Join(dir, "member"))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return st.IsDir(), nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
