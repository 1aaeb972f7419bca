package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/minio/minio-go/v7"
)

// DeletedMessage is the termination message of a successful Delete.
const DeletedMessage = "deleted"

// Delete removes the stored snapshot cfg names (its S3 object or its file)
// and writes the outcome to cfg.TerminationMessagePath: DeletedMessage, or
// the error. A snapshot that is already gone counts as deleted, so a
// retried cleanup succeeds. With cfg.ETag, an object with another ETag
// is not the snapshot's and is left (ErrObjectChanged). It never dials etcd.
func Delete(ctx context.Context, cfg Config) error {
	return Report(cfg, DeletedMessage, deleteStored(ctx, cfg))
}

func deleteStored(ctx context.Context, cfg Config) error {
	if (cfg.S3 == nil) == (cfg.File == "") {
		return errors.New("exactly one stored snapshot (S3 or a file) is required")
	}
	timeout := cfg.Timeout
	if timeout == 0 || timeout > deleteTimeout {
		timeout = deleteTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if cfg.S3 == nil {
		if err := os.Remove(cfg.File); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("delete stored snapshot: %w", err)
		}
		return syncDirOf(cfg.File)
	}
	st, err := newS3Store(*cfg.S3, cfg.PartSize, cfg.StallTimeout)
	if err != nil {
		return err
	}
	if !ValidETag(cfg.ETag) {
		return fmt.Errorf("delete: ETag %q is not one", cfg.ETag)
	}
	if cfg.ETag != "" {
		// Only the snapshot's own object goes: one replaced since (another
		// writer's) stays, and the cleanup fails naming it. minio-go has no
		// conditional delete, so a replacement in the moment between this
		// stat and the delete would still be deleted.
		info, err := st.c.StatObject(ctx, st.loc.Bucket, st.loc.Key, minio.StatObjectOptions{})
		switch {
		case isNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("delete stored snapshot: %w", err)
		case info.ETag != cfg.ETag:
			return fmt.Errorf("%w: %s has ETag %s, not the snapshot's %s: it was replaced by another object, which is left in place",
				ErrObjectChanged, st.uri(), info.ETag, cfg.ETag)
		}
	}
	// S3 answers a delete of a missing key with success.
	if err := st.c.RemoveObject(ctx, st.loc.Bucket, st.loc.Key, minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("delete stored snapshot: %w", err)
	}
	return nil
}

// deleteTimeout bounds one delete: a single request to the store or the
// local file system; longer only means the store is down, and the Job's
// retries with backoff are the better wait.
const deleteTimeout = 2 * time.Minute

func syncDirOf(file string) error { return syncDir(filepath.Dir(file)) }
