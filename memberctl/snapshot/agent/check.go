package agent

import (
	"context"
	"errors"
	"fmt"
)

// CheckedMessage is the termination message of a successful Check.
const CheckedMessage = "verified"

// Check reads the stored snapshot cfg names (its S3 object or its file)
// and compares it with what its EtcdSnapshot recorded, cfg.CheckSize bytes
// of sha256 cfg.CheckSHA256, and with etcd's own trailing hash, as a
// restore will; the outcome goes to cfg.TerminationMessagePath:
// CheckedMessage, or why not. A restore after total loss runs it before
// removing anything, so that a snapshot whose object was deleted or
// replaced since it was taken is passed over for an older one. It never
// dials etcd.
func Check(ctx context.Context, cfg Config) error {
	return report(cfg, CheckedMessage, check(ctx, cfg))
}

func check(ctx context.Context, cfg Config) error {
	if (cfg.S3 == nil) == (cfg.File == "") {
		return errors.New("exactly one stored snapshot (S3 or a file) is required")
	}
	if !isSHA256Hex(cfg.CheckSHA256) || cfg.CheckSize <= 0 {
		return fmt.Errorf("check: want the recorded sha256 (64 lowercase hex) and size, got %q and %d", cfg.CheckSHA256, cfg.CheckSize)
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
	if !ValidETag(cfg.ETag) {
		return fmt.Errorf("check: ETag %q is not one", cfg.ETag)
	}
	return verify(ctx, st, Result{SizeBytes: cfg.CheckSize, SHA256: cfg.CheckSHA256, ETag: cfg.ETag})
}
