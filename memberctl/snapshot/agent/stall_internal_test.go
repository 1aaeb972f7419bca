package agent

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// An object store that accepts connections and then neither reads nor
// answers (a tarpit) fails the upload within a few stall timeouts, not at
// the run's 25 min timeout, which would hold a fleet-wide snapshot slot.
func TestStalledStoreFailsTheUploadEarly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conns := make(chan net.Conn, 64)
	defer func() {
		for {
			select {
			case c := <-conns:
				_ = c.Close()
			default:
				return
			}
		}
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case conns <- c: // held open: never read, never answered
			default:
				_ = c.Close()
			}
		}
	}()
	creds := t.TempDir()
	for k, v := range map[string]string{AccessKeyIDKey: "id", SecretAccessKeyKey: "secret"} {
		if err := os.WriteFile(filepath.Join(creds, k), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const stall = 300 * time.Millisecond
	st, err := newS3Store(S3{Endpoint: "http://" + ln.Addr().String(), Bucket: "backups", Key: "prod/a.db", CredentialsDir: creds}, 0, stall)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	_, err = st.upload(ctx, bytes.NewReader(make([]byte, 32<<20)))
	took := time.Since(start)
	if err == nil {
		t.Fatal("the upload to a store that never answers succeeded")
	}
	// s3Retries tries of a stall each, with minio's backoff between them.
	if took > time.Minute {
		t.Errorf("the stalled upload took %s to fail (error: %v)", took, err)
	}
	t.Logf("failed after %s: %v", took.Round(time.Millisecond), err)
}
