package agent_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
	"github.com/etcdfleet/etcdfleet/test/etcdproc"
	"github.com/etcdfleet/etcdfleet/test/sandbox/objstore"
)

// The agent against a real etcd (KUBEBUILDER_ASSETS/etcd) and real object
// storage (SeaweedFS). Skipped without KUBEBUILDER_ASSETS, like envtest.

const valueSize = 512 << 10 // 512 KiB values: 24 of them make a 12 MiB snapshot

func startEtcd(t *testing.T) string {
	t.Helper()
	return etcdproc.Start(t, filepath.Join(t.TempDir(), "data"), "a", "agent-test").ClientURL
}

// fill writes n values of valueSize and returns the cluster's revision.
func fill(t *testing.T, endpoint string, n int) int64 {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // etcd starts within seconds
	defer cancel()
	var rev int64
	for i := range n {
		for {
			resp, err := cli.Put(ctx, fmt.Sprintf("k%03d", i), strings.Repeat(strconv.Itoa(i%10), valueSize))
			if err == nil {
				rev = resp.Header.Revision
				break
			}
			if ctx.Err() != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return rev
}

func TestSnapshotToS3IsAMultipartUploadVerifiedByChecksum(t *testing.T) {
	endpoint := startEtcd(t)
	rev := fill(t, endpoint, 24)
	ctx := context.Background()
	s3, bucket := startStore(t)
	creds := t.TempDir()
	writeCreds(t, creds, s3.AccessKey, s3.SecretKey)
	term := filepath.Join(t.TempDir(), "termination-log")
	const partSize = 5 << 20 // S3's minimum: a 12 MiB snapshot takes 3 parts
	res, err := agent.Run(ctx, agent.Config{Endpoints: []string{endpoint}, PartSize: partSize, TerminationMessagePath: term,
		S3: &agent.S3{Endpoint: s3.Endpoint, Bucket: bucket, Key: "prod/a.db", Region: "us-east-1", CredentialsDir: creds}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Revision < rev {
		t.Errorf("revision %d, want at least %d (the last write)", res.Revision, rev)
	}
	c, err := s3.Client()
	if err != nil {
		t.Fatal(err)
	}
	obj, err := c.GetObject(ctx, bucket, "prod/a.db", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(obj)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	if int64(len(body)) != res.SizeBytes || hex.EncodeToString(sum[:]) != res.SHA256 {
		t.Errorf("stored %d bytes sha256 %x; agent reported %d bytes sha256 %s", len(body), sum, res.SizeBytes, res.SHA256)
	}
	if res.SizeBytes < 24*valueSize {
		t.Errorf("snapshot of %d bytes cannot hold 24 values of %d bytes", res.SizeBytes, valueSize)
	}
	// A multipart upload's ETag is "<md5 of the part md5s>-<parts>".
	info, err := c.StatObject(ctx, bucket, "prod/a.db", minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("-%d", (res.SizeBytes+partSize-1)/partSize); !strings.HasSuffix(info.ETag, want) {
		t.Errorf("ETag %q: want a multipart upload of %s parts", info.ETag, want[1:])
	}
	got, err := os.ReadFile(term)
	if err != nil {
		t.Fatal(err)
	}
	if parsed, err := agent.ParseResult(string(got)); err != nil || parsed != res {
		t.Errorf("termination message %q parses to %+v, %v; want %+v", got, parsed, err, res)
	}
}

func TestSnapshotToFile(t *testing.T) {
	endpoint := startEtcd(t)
	fill(t, endpoint, 2)
	file := filepath.Join(t.TempDir(), "daily", "a.db")
	res, err := agent.Run(context.Background(), agent.Config{Endpoints: []string{endpoint}, File: file})
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	if hex.EncodeToString(sum[:]) != res.SHA256 || int64(len(body)) != res.SizeBytes {
		t.Errorf("file has sha256 %x, %d bytes; agent reported %+v", sum, len(body), res)
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(file), ".*part*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

func TestFailureIsTheTerminationMessage(t *testing.T) {
	endpoint := startEtcd(t)
	term := filepath.Join(t.TempDir(), "termination-log")
	creds := t.TempDir()
	writeCreds(t, creds, "id", "")
	_, err := agent.Run(context.Background(), agent.Config{Endpoints: []string{endpoint}, TerminationMessagePath: term,
		S3: &agent.S3{Endpoint: "http://127.0.0.1:1", Bucket: "b", Key: "k", CredentialsDir: creds}})
	if err == nil || !strings.Contains(err.Error(), "AWS_SECRET_ACCESS_KEY is empty") {
		t.Fatalf("err = %v, want the empty secret key named", err)
	}
	if got, _ := os.ReadFile(term); string(got) != err.Error() {
		t.Errorf("termination message %q, want the error %q", got, err)
	}
}

func writeCreds(t *testing.T, dir, id, secret string) {
	t.Helper()
	for k, v := range map[string]string{agent.AccessKeyIDKey: id, agent.SecretAccessKeyKey: secret} {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// startStore gives t a bucket of its own on the package's one object
// store (real SeaweedFS), started by the first test that asks and stopped
// by TestMain: a weed costs ~3 s to start and ~8.5 s more before its first
// write (objstore's warm-up), which every test paid when each had its own.
// Buckets keep the tests apart; the private-CA test runs a TLS store of its
// own.
func startStore(t *testing.T) (*objstore.Server, string) {
	t.Helper()
	store.once.Do(func() {
		dir, err := os.MkdirTemp("", "agent-objstore-")
		if err == nil {
			store.dir = dir
			store.s3, err = objstore.Start(context.Background(), dir)
		}
		store.err = err
	})
	if store.err != nil {
		t.Fatal(store.err)
	}
	bucket := fmt.Sprintf("backups-%d", store.buckets.Add(1))
	if err := store.s3.MakeBucket(context.Background(), bucket); err != nil {
		t.Fatal(err)
	}
	return store.s3, bucket
}

// store is the package's object store (startStore).
var store struct {
	once    sync.Once
	s3      *objstore.Server
	dir     string
	err     error
	buckets atomic.Int32
}

func TestMain(m *testing.M) {
	code := m.Run()
	if store.s3 != nil {
		store.s3.Stop()
	}
	if store.dir != "" {
		_ = os.RemoveAll(store.dir)
	}
	os.Exit(code)
}
