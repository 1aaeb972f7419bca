package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// CheckedMessage is the termination message of a successful Check.
const CheckedMessage = "verified"

// Check reads the stored snapshot cfg names (its S3 object or its file)
// and compares it with what its EtcdSnapshot recorded, cfg.CheckSize bytes
// of sha256 cfg.CheckSHA256, and with etcd's own trailing hash, as a
// restore will; the outcome goes to cfg.TerminationMessagePath:
// CheckedMessage, or why not. It never dials etcd. With cfg.DrillDir the
// verify Job runs memberctl/snapshot/restore.Drill instead, which also
// restores the snapshot (etcdfleet-agent wires the two).
func Check(ctx context.Context, cfg Config) error {
	return Report(cfg, CheckedMessage, check(ctx, cfg))
}

// ValidateCheck refuses a check (or a drill) that does not name exactly
// one stored snapshot and what it recorded.
func ValidateCheck(cfg Config) error {
	if (cfg.S3 == nil) == (cfg.File == "") {
		return errors.New("exactly one stored snapshot (S3 or a file) is required")
	}
	if !isSHA256Hex(cfg.CheckSHA256) || cfg.CheckSize <= 0 {
		return fmt.Errorf("check: want the recorded sha256 (64 lowercase hex) and size, got %q and %d", cfg.CheckSHA256, cfg.CheckSize)
	}
	if !ValidETag(cfg.ETag) {
		return fmt.Errorf("check: ETag %q is not one", cfg.ETag)
	}
	if cfg.CheckRevision < 0 {
		return fmt.Errorf("check: revision %d is negative", cfg.CheckRevision)
	}
	return nil
}

func check(ctx context.Context, cfg Config) error {
	if err := ValidateCheck(cfg); err != nil {
		return err
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st, err := newStore(cfg)
	if err != nil {
		return err
	}
	return verify(ctx, st, Result{SizeBytes: cfg.CheckSize, SHA256: cfg.CheckSHA256, ETag: cfg.ETag})
}

// DrillResult is the termination message of a successful restore drill
// (restore.Drill): the stored snapshot restored into a throwaway etcd,
// which served Revision; the whole drill (download, checks, restore,
// start, read) took DurationSeconds.
type DrillResult struct {
	Revision        int64   `json:"revision"`
	DurationSeconds float64 `json:"durationSeconds"`
}

// ParseDrillResult reads a termination message written by a successful
// drill. The message comes from a Pod of the workload cluster: only what
// Drill writes (a positive revision, a duration not negative) is a result.
func ParseDrillResult(msg string) (DrillResult, error) {
	var r DrillResult
	if err := json.Unmarshal([]byte(msg), &r); err != nil {
		return DrillResult{}, fmt.Errorf("restore drill result %q: %w", msg, err)
	}
	if r.Revision <= 0 || r.DurationSeconds < 0 {
		return DrillResult{}, fmt.Errorf("restore drill result %q: no revision, or a negative duration", msg)
	}
	return r, nil
}
