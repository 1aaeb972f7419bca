package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strings"
	"testing"
)

// storedBytes is a store whose stored copy is fixed bytes: what verify
// reads back.
type storedBytes []byte

func (storedBytes) Put(context.Context, io.Reader) (string, error) { return "", nil }
func (b storedBytes) Open(context.Context, string) (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(b)), nil
}

// etcdSnapshot is a body followed by its sha256, as etcd streams it.
func etcdSnapshot(body string) []byte {
	sum := sha256.Sum256([]byte(body))
	return append([]byte(body), sum[:]...)
}

func resultOf(b []byte) Result {
	sum := sha256.Sum256(b)
	return Result{SizeBytes: int64(len(b)), SHA256: hex.EncodeToString(sum[:])}
}

// TestVerify: the stored copy must have the streamed size and sha256, and
// end in etcd's own hash of the rest.
func TestVerify(t *testing.T) {
	good := etcdSnapshot(strings.Repeat("bolt page ", 10_000))
	if err := verify(context.Background(), storedBytes(good), resultOf(good)); err != nil {
		t.Errorf("intact snapshot: %v", err)
	}
	flipped := bytes.Clone(good)
	flipped[100] ^= 1
	if err := verify(context.Background(), storedBytes(flipped), resultOf(good)); err == nil || !strings.Contains(err.Error(), "differs") {
		t.Errorf("a changed byte in the stored copy: err = %v, want it to differ from the streamed one", err)
	}
	if err := verify(context.Background(), storedBytes(good[:len(good)-1]), resultOf(good)); err == nil {
		t.Error("a truncated stored copy passed")
	}
	// Streamed and stored alike, but not what etcd sent (its hash is off).
	if err := verify(context.Background(), storedBytes(flipped), resultOf(flipped)); err == nil || !strings.Contains(err.Error(), "integrity") {
		t.Errorf("a copy failing etcd's own hash: err = %v", err)
	}
}
