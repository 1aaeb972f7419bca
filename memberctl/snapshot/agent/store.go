package agent

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/encrypt"
)

// S3 is an object in an S3-compatible store.
type S3 struct {
	// Endpoint is the store's URL (http:// or https://).
	Endpoint string
	Bucket   string
	Key      string
	Region   string
	// CredentialsDir holds the files AWS_ACCESS_KEY_ID and
	// AWS_SECRET_ACCESS_KEY (a mounted Secret: no key in the Pod spec or
	// the environment).
	CredentialsDir string
	// CAFile is a PEM bundle that alone verifies the store's TLS
	// certificate (a private CA); empty trusts the system's roots.
	CAFile string
	// SSE is the server-side encryption uploads ask for: "" (none),
	// SSES3 or SSEKMS with SSEKMSKeyID. Reads need none: the store
	// decrypts SSE-S3 and SSE-KMS objects itself.
	SSE         string
	SSEKMSKeyID string
	// Limits bound each stage of a transfer with the store; zero fields
	// take the defaults (DefaultS3Limits).
	Limits S3Limits
}

// Server-side encryption types of S3.SSE (the API's SSEType values).
const (
	SSES3  = "SSE-S3"
	SSEKMS = "SSE-KMS"
)

// encryption is the minio encryption of loc's uploads, nil for none.
func encryption(loc S3) (encrypt.ServerSide, error) {
	switch loc.SSE {
	case "":
		return nil, nil
	case SSES3:
		if loc.SSEKMSKeyID != "" {
			return nil, fmt.Errorf("s3 server-side encryption %s takes no KMS key id (%q)", SSES3, loc.SSEKMSKeyID)
		}
		return encrypt.NewSSE(), nil
	case SSEKMS:
		if loc.SSEKMSKeyID == "" {
			return nil, fmt.Errorf("s3 server-side encryption %s needs a KMS key id", SSEKMS)
		}
		return encrypt.NewSSEKMS(loc.SSEKMSKeyID, nil)
	}
	return nil, fmt.Errorf("s3 server-side encryption %q: want %s or %s", loc.SSE, SSES3, SSEKMS)
}

// rootCAs is the pool of loc.CAFile, nil for the system's roots.
func rootCAs(loc S3) (*x509.CertPool, error) {
	if loc.CAFile == "" {
		return nil, nil
	}
	b, err := os.ReadFile(loc.CAFile)
	if err != nil {
		return nil, fmt.Errorf("s3 CA bundle: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("s3 CA bundle %s holds no PEM certificate", loc.CAFile)
	}
	return pool, nil
}

// Credential files in S3.CredentialsDir, the keys of the credentials Secret.
const (
	AccessKeyIDKey     = "AWS_ACCESS_KEY_ID"
	SecretAccessKeyKey = "AWS_SECRET_ACCESS_KEY"
)

// store is where a snapshot goes and is read back from. Put never
// replaces what is already there (ErrObjectExists) and returns the
// stored object's ETag ("" for a file); Open with an etag reads only the
// object with that ETag.
type store interface {
	Put(ctx context.Context, r io.Reader) (etag string, err error)
	Open(ctx context.Context, etag string) (io.ReadCloser, error)
}

func newStore(cfg Config) (store, error) {
	if cfg.S3 != nil {
		return newS3Store(*cfg.S3, cfg.PartSize, cfg.StallTimeout)
	}
	return fileStore(cfg.File), nil
}

type s3Store struct {
	c        *minio.Client
	loc      S3
	partSize int64
	// sse is the encryption uploads ask for (nil: none). Only uploads
	// send it: S3 refuses SSE-S3 and SSE-KMS headers on HEAD, GET and
	// DELETE.
	sse encrypt.ServerSide
}

func newS3Store(loc S3, partSize int64, stall time.Duration) (*s3Store, error) {
	u, err := url.Parse(loc.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("s3 endpoint %q: want http(s)://host[:port]", loc.Endpoint)
	}
	id, err := readCredential(loc.CredentialsDir, AccessKeyIDKey)
	if err != nil {
		return nil, err
	}
	secret, err := readCredential(loc.CredentialsDir, SecretAccessKeyKey)
	if err != nil {
		return nil, err
	}
	// BucketLookupAuto: virtual-host style on AWS's endpoints, path style
	// on every other store (SeaweedFS, Ceph, MinIO...), which is what they serve.
	if stall <= 0 {
		stall = DefaultStallTimeout
	}
	roots, err := rootCAs(loc)
	if err != nil {
		return nil, err
	}
	if roots != nil && u.Scheme != "https" {
		return nil, fmt.Errorf("s3 endpoint %q: a CA bundle needs https", loc.Endpoint)
	}
	sse, err := encryption(loc)
	if err != nil {
		return nil, err
	}
	tr, err := stallTransport(u.Scheme == "https", stall, loc.Limits.withDefaults(), roots)
	if err != nil {
		return nil, fmt.Errorf("s3 transport: %w", err)
	}
	c, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(id, secret, ""),
		Secure: u.Scheme == "https", Region: loc.Region, BucketLookup: minio.BucketLookupAuto, Transport: tr,
		MaxRetries: s3Retries})
	if err != nil {
		return nil, fmt.Errorf("s3 client: %w", err)
	}
	if partSize == 0 {
		partSize = DefaultPartSize
	}
	return &s3Store{c: c, loc: loc, partSize: partSize, sse: sse}, nil
}

func readCredential(dir, key string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, key))
	if err != nil {
		return "", fmt.Errorf("s3 credentials: %w", err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", fmt.Errorf("s3 credentials: %s is empty", key)
	}
	return v, nil
}

// Put streams r as a multipart upload: the size is unknown until etcd's
// stream ends, so the client sends PartSize parts as they fill, holding one
// in memory, and aborts the upload on error.
//
// It never replaces an object (ErrObjectExists). minio-go sends
// If-None-Match: * on the upload's create and complete requests, which
// AWS S3 and MinIO enforce atomically at completion; SeaweedFS enforces
// it on single-part PUTs only and ignores it on multipart uploads. So the
// key is also stat'd first: on such a store, two writers that both start
// before either completes can still race, and the later completion wins.
// The loser is then caught by its ETag: the read-back in verify asks for
// the ETag this upload returned, and restores and cleanups ask for the
// recorded one.
func (s *s3Store) Put(ctx context.Context, r io.Reader) (string, error) {
	if info, err := s.c.StatObject(ctx, s.loc.Bucket, s.loc.Key, minio.StatObjectOptions{}); err == nil {
		return "", s.exists(info.ETag)
	} else if !isNotFound(err) {
		return "", fmt.Errorf("check that %s is free: %w", s.uri(), err)
	}
	return s.upload(ctx, r)
}

// upload is Put's conditional multipart upload, after its stat.
func (s *s3Store) upload(ctx context.Context, r io.Reader) (string, error) {
	opts := minio.PutObjectOptions{PartSize: uint64(s.partSize), ContentType: "application/octet-stream",
		ServerSideEncryption: s.sse}
	opts.SetMatchETagExcept("*")
	info, err := s.c.PutObject(ctx, s.loc.Bucket, s.loc.Key, r, -1, opts)
	if isPreconditionFailed(err) {
		return "", s.exists("")
	}
	if err != nil {
		return "", err
	}
	return info.ETag, nil
}

func (s *s3Store) exists(etag string) error {
	if etag != "" {
		etag = " (ETag " + etag + ")"
	}
	return fmt.Errorf("%w: %s already holds an object%s; a snapshot never replaces one", ErrObjectExists, s.uri(), etag)
}

func (s *s3Store) uri() string { return "s3://" + s.loc.Bucket + "/" + s.loc.Key }

// Open reads the object; with etag, only while it still has that ETag
// (If-Match), so a replaced object is an error and never read as ours.
func (s *s3Store) Open(ctx context.Context, etag string) (io.ReadCloser, error) {
	opts := minio.GetObjectOptions{}
	if etag != "" {
		if err := opts.SetMatchETag(etag); err != nil {
			return nil, err
		}
	}
	obj, err := s.c.GetObject(ctx, s.loc.Bucket, s.loc.Key, opts)
	if err != nil {
		return nil, err
	}
	// GetObject is lazy: Stat sends the request, so a failed precondition
	// or a missing object is reported here, named, not on the first Read.
	if _, err := obj.Stat(); err != nil {
		_ = obj.Close()
		if isPreconditionFailed(err) {
			return nil, fmt.Errorf("%w: %s no longer has ETag %s; it was replaced since it was stored", ErrObjectChanged, s.uri(), etag)
		}
		return nil, err
	}
	return obj, nil
}

// ErrObjectExists: the snapshot's key or file already holds something,
// which a snapshot never replaces. Its text starts the agent's
// termination message, which the controller turns into the reason
// ObjectExists.
var ErrObjectExists = errors.New("ObjectExists")

// ErrObjectChanged: the stored object's ETag is not the one recorded, so
// it is not the snapshot's own object any more.
var ErrObjectChanged = errors.New("ObjectChanged")

func isNotFound(err error) bool {
	r := minio.ToErrorResponse(err)
	return r.StatusCode == http.StatusNotFound || r.Code == "NoSuchKey"
}

func isPreconditionFailed(err error) bool {
	r := minio.ToErrorResponse(err)
	return err != nil && (r.StatusCode == http.StatusPreconditionFailed || r.Code == "PreconditionFailed")
}

// fileStore is a file on a mounted volume (a PVC).
type fileStore string

// Put writes a temporary file beside the target, syncs it and links it
// into place, so that a reader never sees half a snapshot and an existing
// file of the same name is never replaced (ErrObjectExists). Files have
// no ETag.
func (f fileStore) Put(_ context.Context, r io.Reader) (_ string, err error) {
	path := string(f)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	if _, err := os.Lstat(path); err == nil {
		return "", f.exists()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".part-*")
	if err != nil {
		return "", err
	}
	defer func() {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
	}()
	if _, err = io.Copy(tmp, r); err != nil {
		return "", err
	}
	if err = tmp.Sync(); err != nil {
		return "", err
	}
	if err = tmp.Close(); err != nil {
		return "", err
	}
	if err = link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", f.exists()
		}
		return "", err
	}
	return "", syncDir(filepath.Dir(path))
}

// link puts tmp in place at path unless path exists: a hard link fails
// atomically on an existing name. A file system without hard links gets a
// rename, after the Lstat in Put (a race between two writers remains there).
func link(tmp, path string) error {
	err := os.Link(tmp, path)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return err
	}
	return os.Rename(tmp, path)
}

func (f fileStore) exists() error {
	return fmt.Errorf("%w: %s already exists; a snapshot never replaces one", ErrObjectExists, string(f))
}

func (f fileStore) Open(context.Context, string) (io.ReadCloser, error) { return os.Open(string(f)) }

// syncDir makes the rename durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// OpenStored opens a stored snapshot for reading: the S3 object s3, or
// the file when s3 is nil (a restore reads what Run stored). A non-empty
// etag reads the object only while it has that ETag (ErrObjectChanged);
// empty, for artifacts recorded before ETags were, reads whatever is there.
func OpenStored(ctx context.Context, s3 *S3, file, etag string) (io.ReadCloser, error) {
	st, err := newStore(Config{S3: s3, File: file})
	if err != nil {
		return nil, err
	}
	return st.Open(ctx, etag)
}
