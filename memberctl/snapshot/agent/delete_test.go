package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
)

// deleteTwice runs Delete twice on cfg: both succeed (a retried cleanup
// finds the snapshot gone) and report DeletedMessage.
func deleteTwice(t *testing.T, cfg agent.Config) {
	t.Helper()
	cfg.TerminationMessagePath = filepath.Join(t.TempDir(), "termination-log")
	for i := range 2 {
		if err := agent.Delete(context.Background(), cfg); err != nil {
			t.Fatalf("delete #%d: %v", i+1, err)
		}
		if msg, _ := os.ReadFile(cfg.TerminationMessagePath); string(msg) != agent.DeletedMessage {
			t.Errorf("termination message %q, want %q", msg, agent.DeletedMessage)
		}
	}
}

func TestDeleteRemovesTheFileAndIsIdempotent(t *testing.T) {
	file := filepath.Join(t.TempDir(), "daily", "a.db")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("snapshot"), 0o644); err != nil {
		t.Fatal(err)
	}
	deleteTwice(t, agent.Config{File: file})
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("file still there: %v", err)
	}
}

func TestDeleteReportsItsError(t *testing.T) {
	term := filepath.Join(t.TempDir(), "termination-log")
	err := agent.Delete(context.Background(), agent.Config{TerminationMessagePath: term})
	if err == nil {
		t.Fatal("Delete without a stored snapshot succeeded")
	}
	if msg, _ := os.ReadFile(term); !strings.Contains(string(msg), "exactly one") {
		t.Errorf("termination message %q does not carry the error", msg)
	}
}

// The S3 object against real object storage (SeaweedFS); skipped without
// KUBEBUILDER_ASSETS like the rest of this package's store tests.
func TestDeleteRemovesTheS3ObjectAndIsIdempotent(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("KUBEBUILDER_ASSETS is not set")
	}
	ctx := context.Background()
	s3, bucket := startStore(t)
	c, err := s3.Client()
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"sched/a.db", "sched/b.db"} {
		if _, err := c.PutObject(ctx, bucket, key, strings.NewReader("snapshot"), 8, minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	creds := t.TempDir()
	writeCreds(t, creds, s3.AccessKey, s3.SecretKey)
	deleteTwice(t, agent.Config{S3: &agent.S3{Endpoint: s3.Endpoint, Bucket: bucket, Key: "sched/a.db", Region: "us-east-1", CredentialsDir: creds}})
	var left []string
	for obj := range c.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		left = append(left, obj.Key)
	}
	if len(left) != 1 || left[0] != "sched/b.db" {
		t.Errorf("objects left %v, want only sched/b.db", left)
	}
}
