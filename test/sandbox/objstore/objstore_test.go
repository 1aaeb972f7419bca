package objstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/encrypt"

	"github.com/etcdfleet/etcdfleet/test/sandbox/objstore"
)

// TestServesS3: a bucket, a multipart upload and a download against the
// real SeaweedFS, with the one identity; other credentials are refused.
func TestServesS3(t *testing.T) {
	ctx := context.Background()
	s, err := objstore.Start(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if err := s.MakeBucket(ctx, "bkt"); err != nil {
		t.Fatal(err)
	}
	c, err := s.Client()
	if err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("etcd"), 3<<20) // 12 MiB: three 5 MiB parts
	if _, err := c.PutObject(ctx, "bkt", "k", bytes.NewReader(body), -1, minio.PutObjectOptions{PartSize: 5 << 20}); err != nil {
		t.Fatal(err)
	}
	obj, err := c.GetObject(ctx, "bkt", "k", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(obj)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("read back %d bytes (%v), want the %d written", len(got), err, len(body))
	}
	info, err := c.StatObject(ctx, "bkt", "k", minio.StatObjectOptions{})
	if err != nil || !strings.HasSuffix(info.ETag, "-3") {
		t.Errorf("ETag %q (%v), want a 3-part multipart upload", info.ETag, err)
	}
	s.SecretKey = "wrong"
	bad, _ := s.Client()
	if _, err := bad.ListBuckets(ctx); err == nil {
		t.Error("a wrong secret key was accepted")
	}
}

// TestServerSideEncryptionS3: an upload that asks for SSE-S3 (multipart,
// as the snapshot agent streams) is stored encrypted: HEAD reports
// AES256, a GET returns the bytes written, and none of them is on disk,
// where a plain upload's are. SSE-KMS has no KMS behind it and is refused.
func TestServerSideEncryptionS3(t *testing.T) {
	ctx := context.Background()
	s, err := objstore.Start(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if err := s.MakeBucket(ctx, "bkt"); err != nil {
		t.Fatal(err)
	}
	c, err := s.Client()
	if err != nil {
		t.Fatal(err)
	}
	// Random, so that weed stores it uncompressed and a window of it found
	// on disk can only be the plain bytes.
	body := make([]byte, 6<<20) // two 5 MiB parts
	if _, err := rand.Read(body); err != nil {
		t.Fatal(err)
	}
	put := func(key string, sse encrypt.ServerSide, data []byte) error {
		_, err := c.PutObject(ctx, "bkt", key, bytes.NewReader(data), -1,
			minio.PutObjectOptions{PartSize: 5 << 20, ServerSideEncryption: sse})
		return err
	}
	// Bytes of its own, so that finding them does not find the other's.
	plain := make([]byte, len(body))
	if _, err := rand.Read(plain); err != nil {
		t.Fatal(err)
	}
	if err := put("sse", encrypt.NewSSE(), body); err != nil {
		t.Fatalf("SSE-S3 upload: %v", err)
	}
	if err := put("plain", nil, plain); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"sse": "AES256", "plain": ""} {
		info, err := c.StatObject(ctx, "bkt", key, minio.StatObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Metadata.Get("X-Amz-Server-Side-Encryption"); got != want {
			t.Errorf("%s: HEAD x-amz-server-side-encryption %q, want %q", key, got, want)
		}
	}
	obj, err := c.GetObject(ctx, "bkt", "sse", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(obj); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("read back %d bytes (%v), want the %d written", len(got), err, len(body))
	}
	onDisk := func(window []byte) bool {
		found := false
		_ = filepath.WalkDir(filepath.Join(s.Dir, "data"), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || found {
				return nil
			}
			b, _ := os.ReadFile(p)
			found = bytes.Contains(b, window)
			return nil
		})
		return found
	}
	if !onDisk(plain[1<<20 : 1<<20+64]) {
		t.Fatal("the plain object's bytes are not in weed's data files: the check below would prove nothing")
	}
	if onDisk(body[1<<20 : 1<<20+64]) {
		t.Error("the SSE-S3 object's plain bytes are in weed's data files")
	}
	kms, err := encrypt.NewSSEKMS("alias/none", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := put("kms", kms, body[:1<<10]); err == nil {
		t.Error("an SSE-KMS upload was accepted by a store with no KMS")
	}
}
