package agent

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Subcommand is the etcdfleet-agent subcommand that runs Run.
const Subcommand = "snapshot-agent"

// DefaultTimeout is the timeout of one run. The snapshot Job's
// activeDeadlineSeconds is larger, so that the agent reports its own
// timeout (a termination message) rather than being killed silently.
// Reaching etcd is bounded far below it by EtcdLimits.
const DefaultTimeout = 25 * time.Minute

// DefaultPartSize is the multipart upload part size: the agent holds one
// part in memory, and 16 MiB parts allow objects of up to 156 GiB (10,000
// parts), far above etcd's largest backend.
const DefaultPartSize = 16 << 20

// Config is one snapshot run.
type Config struct {
	// Endpoints are the members' client URLs; the client picks one.
	Endpoints []string
	// SingleMember: Endpoints is one member, which may have no quorum
	// (a survivor of a lost majority): its revision is read from it
	// alone (serializable) rather than by a linearizable read, which
	// would need a leader. The snapshot comes from the same member, so
	// it still holds at least that revision.
	SingleMember bool
	// CAFile verifies the members' serving certificates (https endpoints);
	// CertFile and KeyFile are the client certificate for mTLS.
	CAFile, CertFile, KeyFile string
	// Etcd bounds reaching etcd and its first answers; zero fields are
	// DefaultEtcdLimits.
	Etcd EtcdLimits

	// Exactly one of S3 and File is the destination.
	S3   *S3
	File string

	// PartSize of the multipart upload (S3 only); 0 is DefaultPartSize.
	PartSize int64
	// Timeout of the whole run; 0 is DefaultTimeout.
	Timeout time.Duration
	// StallTimeout ends a transfer with object storage that moved no byte
	// for this long; 0 is DefaultStallTimeout.
	StallTimeout time.Duration
	// TerminationMessagePath receives the Result as JSON, or the error.
	TerminationMessagePath string
	// Delete removes the stored snapshot instead of taking one (Delete);
	// Endpoints and TLS are not used.
	Delete bool
	// CheckSHA256 and CheckSize, when set, check the stored snapshot
	// against them instead of taking one (Check); Endpoints and TLS are
	// not used.
	CheckSHA256 string
	CheckSize   int64
	// ETag, with Delete or CheckSHA256, is the object's recorded ETag:
	// only the object that still has it is deleted or passes the check.
	// Empty (artifacts recorded before ETags were) acts on whatever the
	// key holds.
	ETag string
	// DrillDir, with CheckSHA256, makes the check a restore drill
	// (restore.Drill): the snapshot is downloaded there, restored with
	// etcdutl into a throwaway data dir there and served by a throwaway
	// etcd, whose revision must be at least CheckRevision (the artifact's,
	// read just before the snapshot was taken).
	DrillDir      string
	CheckRevision int64
}

// Result is what a successful run reports in its termination message.
type Result struct {
	SizeBytes int64  `json:"sizeBytes"`
	SHA256    string `json:"sha256"`
	Revision  int64  `json:"revision"`
	// ETag of the stored S3 object, as the store returned it for this
	// upload; empty for a file.
	ETag string `json:"etag,omitempty"`
}

// MaxETagLength bounds an ETag: S3's are 32 hex digits and, for a
// multipart upload, "-<parts>"; 128 leaves room for other stores'.
const MaxETagLength = 128

// ValidETag: empty, or at most MaxETagLength visible ASCII characters
// without '"' or ',' (minio-go strips the quotes; the ETag ends up in
// If-Match headers and command-line flags).
func ValidETag(s string) bool {
	if len(s) > MaxETagLength {
		return false
	}
	for _, c := range []byte(s) {
		if c <= ' ' || c > '~' || c == '"' || c == ',' {
			return false
		}
	}
	return true
}

// ParseResult reads a termination message written by a successful run.
func ParseResult(msg string) (Result, error) {
	var r Result
	if err := json.Unmarshal([]byte(msg), &r); err != nil {
		return Result{}, fmt.Errorf("snapshot agent result %q: %w", msg, err)
	}
	if r.SHA256 == "" || r.SizeBytes <= 0 {
		return Result{}, fmt.Errorf("snapshot agent result %q: no checksum or size", msg)
	}
	// The message comes from a Pod of the workload cluster and the sha256
	// ends up in restores: only what Run writes (hex.EncodeToString of a
	// sha256, lowercase, and etcd's revision, never negative) is a result.
	if !isSHA256Hex(r.SHA256) || r.Revision < 0 {
		return Result{}, fmt.Errorf("snapshot agent result %q: not a sha256 in lowercase hex or a negative revision", msg)
	}
	if !ValidETag(r.ETag) {
		return Result{}, fmt.Errorf("snapshot agent result %q: not an ETag (at most %d visible ASCII characters, no quote or comma)", msg, MaxETagLength)
	}
	return r, nil
}

func isSHA256Hex(s string) bool {
	if len(s) != hex.EncodedLen(sha256.Size) {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Run takes the snapshot, stores it, reads it back to verify it and writes
// the outcome to cfg.TerminationMessagePath (the Result, or the error).
func Run(ctx context.Context, cfg Config) (Result, error) {
	res, err := run(ctx, cfg)
	b, _ := json.Marshal(res)
	return res, Report(cfg, string(b), err)
}

// report writes the outcome of a run to cfg.TerminationMessagePath, where
// the controller reads it: ok on success, else the error. A failed write
// fails a run that succeeded, since the controller would not learn of it.
// Report writes the outcome of a run to cfg.TerminationMessagePath: ok,
// or err's text. It returns err, or the failure to write.
func Report(cfg Config, ok string, err error) error {
	msg := ok
	if err != nil {
		msg = err.Error()
	}
	if cfg.TerminationMessagePath != "" {
		if werr := os.WriteFile(cfg.TerminationMessagePath, []byte(msg), 0o644); werr != nil && err == nil {
			err = fmt.Errorf("write termination message: %w", werr)
		}
	}
	return err
}

func run(ctx context.Context, cfg Config) (Result, error) {
	if (cfg.S3 == nil) == (cfg.File == "") {
		return Result{}, errors.New("exactly one destination (S3 or a file) is required")
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	store, err := newStore(cfg)
	if err != nil {
		return Result{}, err
	}
	cli, tlsCfg, err := dial(cfg)
	if err != nil {
		return Result{}, err
	}
	defer cli.Close()
	lim := cfg.Etcd.withDefaults()
	if err := connect(ctx, cli, tlsCfg, cfg.Endpoints, lim); err != nil {
		return Result{}, err
	}

	// etcd's snapshot stream carries no revision, so take the cluster's
	// latest one just before: a linearizable read, so the snapshot that
	// follows holds at least this revision.
	revOpts := []clientv3.OpOption{clientv3.WithCountOnly()}
	if cfg.SingleMember {
		if len(cfg.Endpoints) != 1 {
			return Result{}, fmt.Errorf("a single-member snapshot needs exactly one endpoint, got %d", len(cfg.Endpoints))
		}
		revOpts = append(revOpts, clientv3.WithSerializable())
	}
	fb := firstByte(ctx, cfg.Endpoints, lim, "answer to the revision read")
	rev, err := cli.Get(fb, "\x00", revOpts...)
	fb.Cancel(nil)
	if err := fb.done(err); err != nil {
		return Result{}, fmt.Errorf("read etcd's revision: %w", err)
	}
	// The stream's context outlives the first chunk: the whole snapshot
	// flows through it.
	fb = firstByte(ctx, cfg.Endpoints, lim, "snapshot data")
	defer fb.Cancel(nil)
	snap, err := cli.SnapshotWithVersion(fb)
	if err := fb.done(err); err != nil {
		return Result{}, fmt.Errorf("start etcd snapshot: %w", err)
	}
	defer snap.Snapshot.Close()
	h := sha256.New()
	counted := &countingReader{r: io.TeeReader(snap.Snapshot, h)}
	etag, err := store.Put(ctx, counted)
	if errors.Is(err, ErrObjectExists) {
		return Result{}, err // its text starts the termination message: the controller's reason
	}
	if err != nil {
		return Result{}, fmt.Errorf("store snapshot: %w", err)
	}
	res := Result{SizeBytes: counted.n, SHA256: hex.EncodeToString(h.Sum(nil)), Revision: rev.Header.Revision, ETag: etag}
	if h := snap.Header; h != nil && h.Revision > res.Revision {
		res.Revision = h.Revision
	}
	if err := verify(ctx, store, res); err != nil {
		return Result{}, err
	}
	return res, nil
}

// dial makes the etcd client, and returns its TLS configuration (nil
// for plain http) for connect's diagnosis.
func dial(cfg Config) (*clientv3.Client, *tls.Config, error) {
	var tlsCfg *tls.Config
	if cfg.CAFile != "" {
		info := transport.TLSInfo{TrustedCAFile: cfg.CAFile, CertFile: cfg.CertFile, KeyFile: cfg.KeyFile}
		var err error
		if tlsCfg, err = info.ClientConfig(); err != nil {
			return nil, nil, fmt.Errorf("etcd client TLS: %w", err)
		}
	}
	// No DialTimeout: etcd's client only applies it to authentication,
	// which the agent does not use; connect bounds the dial.
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.Endpoints, TLS: tlsCfg,
		// Failures reach the termination message; the client's own retry
		// warnings would only crowd the log.
		Logger: zap.NewNop()})
	if err != nil {
		return nil, nil, fmt.Errorf("dial etcd %v: %w", cfg.Endpoints, err)
	}
	return cli, tlsCfg, nil
}

// verify reads the stored copy back: its size and sha256 must be what was
// streamed, and its last 32 bytes must be etcd's own sha256 of the rest,
// which etcd appends to every snapshot (etcdutl checks it on restore).
// With want.ETag, only the object with that ETag is read.
func verify(ctx context.Context, store store, want Result) error {
	r, err := store.Open(ctx, want.ETag)
	if err != nil {
		return fmt.Errorf("read back the stored snapshot: %w", err)
	}
	defer r.Close()
	whole := sha256.New()
	body := &trailerHash{h: sha256.New()}
	n, err := io.Copy(io.MultiWriter(whole, body), r)
	if err != nil {
		return fmt.Errorf("read back the stored snapshot: %w", err)
	}
	if got := hex.EncodeToString(whole.Sum(nil)); n != want.SizeBytes || got != want.SHA256 {
		return MarkPermanent(fmt.Errorf("stored snapshot differs from the one streamed: %d bytes sha256 %s, want %d bytes sha256 %s",
			n, got, want.SizeBytes, want.SHA256))
	}
	if !body.ok() {
		return MarkPermanent(errors.New("stored snapshot fails etcd's own integrity hash (its last 32 bytes)"))
	}
	return nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// trailerHash hashes everything written to it except the last 32 bytes,
// which it keeps to compare with that hash.
type trailerHash struct {
	h    hash.Hash
	tail []byte
}

func (t *trailerHash) Write(p []byte) (int, error) {
	t.tail = append(t.tail, p...)
	if over := len(t.tail) - sha256.Size; over > 0 {
		t.h.Write(t.tail[:over])
		t.tail = append(t.tail[:0], t.tail[over:]...)
	}
	return len(p), nil
}

func (t *trailerHash) ok() bool {
	return len(t.tail) == sha256.Size && string(t.h.Sum(nil)) == string(t.tail)
}
