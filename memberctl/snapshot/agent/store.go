package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
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
}

// Credential files in S3.CredentialsDir, the keys of the credentials Secret.
const (
	AccessKeyIDKey     = "AWS_ACCESS_KEY_ID"
	SecretAccessKeyKey = "AWS_SECRET_ACCESS_KEY"
)

// store is where a snapshot goes and is read back from.
type store interface {
	Put(ctx context.Context, r io.Reader) error
	Open(ctx context.Context) (io.ReadCloser, error)
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
	tr, err := stallTransport(u.Scheme == "https", stall)
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
	return &s3Store{c: c, loc: loc, partSize: partSize}, nil
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
func (s *s3Store) Put(ctx context.Context, r io.Reader) error {
	_, err := s.c.PutObject(ctx, s.loc.Bucket, s.loc.Key, r, -1,
		minio.PutObjectOptions{PartSize: uint64(s.partSize), ContentType: "application/octet-stream"})
	return err
}

func (s *s3Store) Open(ctx context.Context) (io.ReadCloser, error) {
	return s.c.GetObject(ctx, s.loc.Bucket, s.loc.Key, minio.GetObjectOptions{})
}

// fileStore is a file on a mounted volume (a PVC).
type fileStore string

// Put writes a temporary file beside the target, syncs it and renames it
// into place, so that a reader never sees half a snapshot and a failed run
// leaves an older snapshot of the same name intact.
func (f fileStore) Put(_ context.Context, r io.Reader) (err error) {
	path := string(f)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".part-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = io.Copy(tmp, r); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func (f fileStore) Open(context.Context) (io.ReadCloser, error) { return os.Open(string(f)) }

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
// the file when s3 is nil (a restore reads what Run stored).
func OpenStored(ctx context.Context, s3 *S3, file string) (io.ReadCloser, error) {
	st, err := newStore(Config{S3: s3, File: file})
	if err != nil {
		return nil, err
	}
	return st.Open(ctx)
}
