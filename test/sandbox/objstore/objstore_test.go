package objstore_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

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
