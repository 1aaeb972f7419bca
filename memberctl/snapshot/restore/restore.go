package restore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"

	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
)

// Subcommand is the etcdfleet-agent subcommand that runs Run.
const Subcommand = "restore-agent"

// DefaultTimeout bounds one restore: a download and a rewrite of the
// backend, both linear in the snapshot's size.
const DefaultTimeout = 30 * time.Minute

// Config is one restore into a new member's data directory.
type Config struct {
	// Exactly one of S3 and File is the snapshot to restore.
	S3   *agent.S3
	File string
	// SHA256, when set, must be the snapshot's (the artifact's sha256).
	SHA256 string
	// ETag, when set, is the S3 object's recorded ETag: only the object
	// that still has it is read (If-Match). Empty for files and for
	// artifacts recorded before ETags were.
	ETag string

	// DataDir is the member's --data-dir; it must not hold a member yet.
	DataDir string
	// Name, PeerURLs, InitialCluster and InitialClusterToken are the
	// member's flags of the same names. A new token gives the restored
	// cluster a new cluster ID.
	Name                string
	PeerURLs            []string
	InitialCluster      string
	InitialClusterToken string

	// Timeout of the whole run; 0 is DefaultTimeout.
	Timeout time.Duration
}

// ErrAlreadyRestored is returned, and Run does nothing, when DataDir
// already holds a member: a restarted Pod must keep what it wrote since.
var ErrAlreadyRestored = errors.New("data dir already holds a member; not restoring")

// Run downloads the snapshot, checks it, and writes a fresh data
// directory from it with etcdutl's restore (which also checks etcd's own
// trailing hash).
func Run(ctx context.Context, cfg Config) error {
	if (cfg.S3 == nil) == (cfg.File == "") {
		return errors.New("exactly one source (S3 or a file) is required")
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "member")); err == nil {
		return ErrAlreadyRestored
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The work dir lives inside the data dir: the data volume's mount
	// point is the only writable place in the init container (its root
	// filesystem is read-only), and the final rename must not cross
	// filesystems.
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(cfg.DataDir, ".restore-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// etcdutl refuses an existing output directory: restore beside it,
	// then move the member directory in.
	out := filepath.Join(tmp, "data")
	src := stored{s3: cfg.S3, file: cfg.File, etag: cfg.ETag, sha256: cfg.SHA256}
	if err := fetchAndRestore(ctx, src, tmp, out, cfg.Name, cfg.PeerURLs, cfg.InitialCluster, cfg.InitialClusterToken); err != nil {
		return err
	}
	return os.Rename(filepath.Join(out, "member"), filepath.Join(cfg.DataDir, "member"))
}

// stored is a stored snapshot and what its artifact recorded: only the
// object with etag is read; sha256 and size, when set, must match.
type stored struct {
	s3         *agent.S3
	file, etag string
	sha256     string
	size       int64
}

// fetchAndRestore downloads src into work (checking it) and writes a data
// dir for member name at out with etcdutl's restore, which checks etcd's
// own trailing hash. Both a seed's restore (Run) and a restore drill
// (Drill) go through it, so a drill proves what a seed would do.
func fetchAndRestore(ctx context.Context, src stored, work, out, name string, peers []string, initialCluster, token string) error {
	file := filepath.Join(work, "snapshot.db")
	if err := fetch(ctx, src, file); err != nil {
		return err
	}
	err := snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{SnapshotPath: file, Name: name,
		OutputDataDir: out, PeerURLs: peers, InitialCluster: initialCluster, InitialClusterToken: token})
	if err != nil {
		return fmt.Errorf("etcdutl snapshot restore: %w", err)
	}
	return nil
}

// fetch copies the snapshot to file, checking its sha256 and size when
// known.
func fetch(ctx context.Context, s stored, file string) error {
	src, err := agent.OpenStored(ctx, s.s3, s.file, s.etag)
	if err != nil {
		return fmt.Errorf("open snapshot: %w", err)
	}
	defer src.Close()
	dst, err := os.Create(file)
	if err != nil {
		return err
	}
	defer dst.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(dst, h), src)
	if err != nil {
		return fmt.Errorf("download snapshot: %w", err)
	}
	if s.size > 0 && n != s.size {
		return agent.MarkPermanent(fmt.Errorf("snapshot is %d bytes, want %d", n, s.size))
	}
	if got := hex.EncodeToString(h.Sum(nil)); s.sha256 != "" && got != s.sha256 {
		return agent.MarkPermanent(fmt.Errorf("snapshot sha256 is %s, want %s", got, s.sha256))
	}
	return dst.Sync()
}
