package agent_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/restore"
)

// Writes that never replace, and reads, checks and deletes that act only
// on the object the snapshot recorded (its ETag), against real etcd and
// real object storage (SeaweedFS).

func TestSecondSnapshotToTheSameKeyFailsAndLeavesTheFirst(t *testing.T) {
	endpoint := startEtcd(t)
	fill(t, endpoint, 2)
	ctx := context.Background()
	s3, bucket := startStore(t)
	creds := t.TempDir()
	writeCreds(t, creds, s3.AccessKey, s3.SecretKey)
	loc := &agent.S3{Endpoint: s3.Endpoint, Bucket: bucket, Key: "ns/main/uid/s.db", Region: "us-east-1", CredentialsDir: creds}
	first, err := agent.Run(ctx, agent.Config{Endpoints: []string{endpoint}, S3: loc})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s3.Client()
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.StatObject(ctx, bucket, loc.Key, minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if first.ETag == "" || first.ETag != info.ETag {
		t.Errorf("result ETag %q, the stored object's %q", first.ETag, info.ETag)
	}

	fill(t, endpoint, 3) // the second snapshot differs from the first
	term := filepath.Join(t.TempDir(), "termination-log")
	_, err = agent.Run(ctx, agent.Config{Endpoints: []string{endpoint}, S3: loc, TerminationMessagePath: term})
	if !errors.Is(err, agent.ErrObjectExists) {
		t.Fatalf("second snapshot to the same key: err = %v, want ErrObjectExists", err)
	}
	msg, _ := os.ReadFile(term)
	if !strings.HasPrefix(string(msg), "ObjectExists: ") || !strings.Contains(string(msg), "s3://"+bucket+"/"+loc.Key) {
		t.Errorf("termination message %q: want it to start with ObjectExists: and name the key", msg)
	}
	if got := objectSum(t, c, bucket, loc.Key); got != first.SHA256 {
		t.Errorf("the first snapshot's object now has sha256 %s, want its own %s", got, first.SHA256)
	}
}

func TestSecondSnapshotToTheSameFileFailsAndLeavesTheFirst(t *testing.T) {
	endpoint := startEtcd(t)
	fill(t, endpoint, 2)
	file := filepath.Join(t.TempDir(), "daily", "a.db")
	first, err := agent.Run(context.Background(), agent.Config{Endpoints: []string{endpoint}, File: file})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, endpoint, 3)
	if _, err := agent.Run(context.Background(), agent.Config{Endpoints: []string{endpoint}, File: file}); !errors.Is(err, agent.ErrObjectExists) {
		t.Fatalf("second snapshot to the same file: err = %v, want ErrObjectExists", err)
	}
	body, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(body); hex.EncodeToString(sum[:]) != first.SHA256 {
		t.Errorf("the first snapshot's file was replaced")
	}
}

// replaced stores a snapshot's bytes under key as a multipart upload (as
// the agent does), then replaces them with the same bytes in a single
// PUT: same content, another object, another ETag. It returns the first
// ETag and the snapshot's sha256 and size.
func replaced(t *testing.T, c *minio.Client, bucket, key string) (etag string, want agent.Result) {
	t.Helper()
	ctx := context.Background()
	body := etcdLike(strings.Repeat("bolt page ", 1000))
	info, err := c.PutObject(ctx, bucket, key, bytes.NewReader(body), -1, minio.PutObjectOptions{PartSize: 5 << 20})
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.PutObject(ctx, bucket, key, bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.ETag == info.ETag {
		t.Fatalf("the replacement has the same ETag %q", info.ETag)
	}
	sum := sha256.Sum256(body)
	return info.ETag, agent.Result{SizeBytes: int64(len(body)), SHA256: hex.EncodeToString(sum[:])}
}

func TestDeleteLeavesAnObjectReplacedSinceTheSnapshot(t *testing.T) {
	needAssets(t)
	ctx := context.Background()
	s3, bucket := startStore(t)
	c, err := s3.Client()
	if err != nil {
		t.Fatal(err)
	}
	creds := t.TempDir()
	writeCreds(t, creds, s3.AccessKey, s3.SecretKey)
	loc := &agent.S3{Endpoint: s3.Endpoint, Bucket: bucket, Key: "ns/main/uid/s.db", Region: "us-east-1", CredentialsDir: creds}
	oldETag, _ := replaced(t, c, bucket, loc.Key)
	term := filepath.Join(t.TempDir(), "termination-log")
	err = agent.Delete(ctx, agent.Config{Delete: true, S3: loc, ETag: oldETag, TerminationMessagePath: term})
	if !errors.Is(err, agent.ErrObjectChanged) {
		t.Fatalf("delete of a replaced object: err = %v, want ErrObjectChanged", err)
	}
	if msg, _ := os.ReadFile(term); !strings.Contains(string(msg), "left in place") {
		t.Errorf("termination message %q does not say the object was left", msg)
	}
	info, err := c.StatObject(ctx, bucket, loc.Key, minio.StatObjectOptions{})
	if err != nil {
		t.Fatalf("the replacing object was deleted: %v", err)
	}
	// With the object's own ETag it goes, and a retry finds it gone.
	deleteTwice(t, agent.Config{S3: loc, ETag: info.ETag})
	if _, err := c.StatObject(ctx, bucket, loc.Key, minio.StatObjectOptions{}); err == nil {
		t.Error("the object with the recorded ETag is still there")
	}
}

// Check (the total-loss verify Job) and restore read only the recorded
// object: the same bytes under another ETag are refused.
func TestCheckAndRestoreReadOnlyTheRecordedObject(t *testing.T) {
	needAssets(t)
	ctx := context.Background()
	s3, bucket := startStore(t)
	c, err := s3.Client()
	if err != nil {
		t.Fatal(err)
	}
	creds := t.TempDir()
	writeCreds(t, creds, s3.AccessKey, s3.SecretKey)
	loc := &agent.S3{Endpoint: s3.Endpoint, Bucket: bucket, Key: "ns/main/uid/s.db", Region: "us-east-1", CredentialsDir: creds}
	oldETag, want := replaced(t, c, bucket, loc.Key)
	check := agent.Config{S3: loc, CheckSHA256: want.SHA256, CheckSize: want.SizeBytes, TerminationMessagePath: filepath.Join(t.TempDir(), "m")}
	if err := agent.Check(ctx, check); err != nil {
		t.Fatalf("check without an ETag (an artifact recorded before ETags): %v", err)
	}
	check.ETag = oldETag
	if err := agent.Check(ctx, check); !errors.Is(err, agent.ErrObjectChanged) {
		t.Errorf("check of a replaced object: err = %v, want ErrObjectChanged", err)
	}
	err = restore.Run(ctx, restore.Config{S3: loc, SHA256: want.SHA256, ETag: oldETag, DataDir: filepath.Join(t.TempDir(), "data"),
		Name: "a", PeerURLs: []string{"http://127.0.0.1:2380"}, InitialCluster: "a=http://127.0.0.1:2380", InitialClusterToken: "t"})
	if !errors.Is(err, agent.ErrObjectChanged) {
		t.Errorf("restore of a replaced object: err = %v, want ErrObjectChanged", err)
	}
}

func objectSum(t *testing.T, c *minio.Client, bucket, key string) string {
	t.Helper()
	obj, err := c.GetObject(context.Background(), bucket, key, minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	h := sha256.New()
	if _, err := io.Copy(h, obj); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// etcdLike is body followed by its sha256, as etcd streams a snapshot.
func etcdLike(body string) []byte {
	sum := sha256.Sum256([]byte(body))
	return append([]byte(body), sum[:]...)
}

// needAssets skips a store-only test without KUBEBUILDER_ASSETS, like
// the ones that start etcd (etcdproc).
func needAssets(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("KUBEBUILDER_ASSETS is not set")
	}
}
