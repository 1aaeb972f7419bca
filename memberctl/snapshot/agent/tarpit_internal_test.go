package agent

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Tarpits: loopback servers that each stall one stage of a transfer. The
// run's timeout is minutes; each stage's limit is set short here, and
// every test checks that the named stage cut the transfer (the error's
// kind and its message), well before the run's timeout would have.

// tarpitRun is the whole-run timeout the tests run under; a stalled
// stage must end the transfer long before it.
const tarpitRun = 30 * time.Second

// shortLimits sets only stage's limit short; the others are far beyond
// the test, so only stage can cut it.
func shortLimits(stage Stage) S3Limits {
	l := S3Limits{ConnectTimeout: time.Hour, FirstByteTimeout: time.Hour, MinThroughput: 1, ThroughputWindow: time.Hour}
	switch stage {
	case StageConnect:
		l.ConnectTimeout = 300 * time.Millisecond
	case StageFirstByte:
		l.FirstByteTimeout = 300 * time.Millisecond
	case StageThroughput:
		l.MinThroughput, l.ThroughputWindow = 1<<20, 500*time.Millisecond
	}
	return l
}

func tarpitStore(t *testing.T, endpoint string, lim S3Limits) *s3Store {
	t.Helper()
	creds := t.TempDir()
	for k, v := range map[string]string{AccessKeyIDKey: "id", SecretAccessKeyKey: "secret"} {
		if err := os.WriteFile(filepath.Join(creds, k), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st, err := newS3Store(S3{Endpoint: endpoint, Bucket: "backups", Key: "prod/a.db", CredentialsDir: creds, Limits: lim}, 5<<20, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// holdingListener accepts connections on 127.0.0.1 and hands each to
// serve, closing them all at the end of the test.
func holdingListener(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				go func() { <-done; _ = c.Close() }()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// expectStage checks that err is stage's StageError, named in its
// message with its flag, and came well before the run's timeout.
func expectStage(t *testing.T, err error, stage Stage, flag string, took time.Duration) {
	t.Helper()
	var se *StageError
	if !errors.As(err, &se) || se.Stage != stage {
		t.Fatalf("error %v (%T), want a %q StageError", err, err, stage)
	}
	if msg := err.Error(); !strings.Contains(msg, "s3 "+string(stage)) || !strings.Contains(msg, "--"+flag) {
		t.Errorf("error %q names neither the stage nor --%s", msg, flag)
	}
	if took > tarpitRun/2 {
		t.Errorf("the %s stall took %s to fail, near the run's timeout %s", stage, took, tarpitRun)
	}
	t.Logf("failed after %s: %v", took.Round(time.Millisecond), err)
}

// TestTarpitNeverAnswering: a store that reads every request and never
// answers fails on the first byte's limit.
func TestTarpitNeverAnswering(t *testing.T) {
	addr := holdingListener(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	st := tarpitStore(t, "http://"+addr, shortLimits(StageFirstByte))
	ctx, cancel := context.WithTimeout(context.Background(), tarpitRun)
	defer cancel()
	start := time.Now()
	_, err := st.Put(ctx, bytes.NewReader(make([]byte, 1<<20)))
	expectStage(t, err, StageFirstByte, flagS3FirstByteTimeout, time.Since(start))
}

// TestTarpitNeverCompletingTLS: a store that accepts TCP and never
// completes the TLS handshake fails on the connect limit.
func TestTarpitNeverCompletingTLS(t *testing.T) {
	addr := holdingListener(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	st := tarpitStore(t, "https://"+addr, shortLimits(StageConnect))
	ctx, cancel := context.WithTimeout(context.Background(), tarpitRun)
	defer cancel()
	start := time.Now()
	_, err := st.Open(ctx, "")
	expectStage(t, err, StageConnect, flagS3ConnectTimeout, time.Since(start))
}

// TestTarpitTrickleReading: a store that answers like S3 but reads an
// upload's body at a trickle (1 KiB every 50 ms) fails on the floor.
func TestTarpitTrickleReading(t *testing.T) {
	// stop ends the trickle at the end of the test: the server would
	// otherwise keep draining the megabytes its socket buffered.
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Query().Has("location"):
			_, _ = io.WriteString(w, `<LocationConstraint>us-east-1</LocationConstraint>`)
		case r.Method == http.MethodHead:
			w.WriteHeader(http.StatusNotFound)
		case r.Method == http.MethodPost:
			_, _ = io.WriteString(w, `<InitiateMultipartUploadResult><Bucket>backups</Bucket><Key>prod/a.db</Key><UploadId>u1</UploadId></InitiateMultipartUploadResult>`)
		default:
			buf := make([]byte, 1<<10)
			for {
				if _, err := r.Body.Read(buf); err != nil {
					return
				}
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) })
	st := tarpitStore(t, srv.URL, shortLimits(StageThroughput))
	ctx, cancel := context.WithTimeout(context.Background(), tarpitRun)
	defer cancel()
	start := time.Now()
	_, err := st.Put(ctx, bytes.NewReader(make([]byte, 12<<20)))
	expectStage(t, err, StageThroughput, flagS3MinThroughput, time.Since(start))
}
