package objstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/etcdfleet/etcdfleet/test/sandbox/proc"
)

// EnvBinary names a prebuilt weed binary; unset, Binary runs
// test/tools/seaweedfs.sh (a cache hit after the first build).
const EnvBinary = "SEAWEEDFS_BINARY"

// startTimeout bounds waiting for the S3 gateway to answer: master, volume
// server, filer and gateway start in turn and elect a master leader (about
// 5-15 s on a loaded 2-core machine).
const startTimeout = 2 * time.Minute

// EnvSSEKey is weed's setting s3.sse.key as an environment variable: a
// secret from which the S3 gateway derives its SSE-S3 key (HKDF-SHA256).
// Without it, weed answers an upload that asks for SSE-S3
// (x-amz-server-side-encryption: AES256) with an internal error.
const EnvSSEKey = "WEED_S3_SSE_KEY"

// sseKey is every sandbox store's SSE-S3 secret: a test store's
// encryption protects nothing, it only has to be real.
const sseKey = "etcdfleet-sandbox-sse-s3"

// IP is the loopback address every port binds. Not 127.0.0.1: the
// simulated kubelet rewrites that address in container arguments to the
// Pod's IP, and the snapshot agent gets the endpoint as an argument.
const IP = "127.0.0.2"

// Server is one running SeaweedFS with its S3 gateway on loopback.
type Server struct {
	// Endpoint is the S3 URL, http://<IP>:<port> (https:// with Options.TLS).
	Endpoint string
	// CAFile is the PEM CA that signed the server's certificate (Options.TLS), else empty.
	CAFile string
	// AccessKey and SecretKey are the one admin identity.
	AccessKey, SecretKey string
	// Dir holds the data and weed.log.
	Dir string

	p          *proc.Process
	stopWarmUp context.CancelFunc
}

// Binary returns the weed binary: $SEAWEEDFS_BINARY, or the one
// test/tools/seaweedfs.sh builds and caches.
func Binary() (string, error) {
	if b := os.Getenv(EnvBinary); b != "" {
		return b, nil
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "tools", "seaweedfs.sh")
	out, err := exec.Command(script).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("objstore: %s: %v\n%s", script, err, ee.Stderr)
		}
		return "", fmt.Errorf("objstore: %s: %w", script, err)
	}
	return string(trimNewline(out)), nil
}

func trimNewline(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// Start runs `weed server -filer -s3` in dir, every port on IP, and
// waits until the S3 gateway serves authenticated requests.
func Start(ctx context.Context, dir string) (*Server, error) { return StartWith(ctx, dir, Options{}) }

// StartWith is Start with options.
func StartWith(ctx context.Context, dir string, o Options) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	s := &Server{AccessKey: "etcdfleet-test", SecretKey: "etcdfleet-test-secret", Dir: dir}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "s3.json")
	if err := writeIdentities(cfg, s.AccessKey, s.SecretKey); err != nil {
		return nil, err
	}
	// Eight ports: master, volume, filer and S3 each with its gRPC port
	// (weed's default gRPC port is the HTTP port + 10000, which parallel
	// sandboxes could not share).
	ports, err := freePorts(8)
	if err != nil {
		return nil, err
	}
	p := func(i int) string { return strconv.Itoa(ports[i]) }
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "weed.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	var tlsArgs []string
	scheme := "http://"
	if o.TLS {
		ca, cert, key, err := writeTLS(dir)
		if err != nil {
			return nil, fmt.Errorf("objstore: TLS: %w", err)
		}
		// With a certificate, weed serves S3 over TLS only, on -s3.port.
		tlsArgs = []string{"-s3.cert.file=" + cert, "-s3.key.file=" + key}
		s.CAFile, scheme = ca, "https://"
	}
	cmd := exec.Command(bin, append([]string{"server",
		"-ip=" + IP, "-ip.bind=" + IP, "-dir=" + data,
		// Never report anything to the internet.
		"-master.telemetry=false",
		"-master.port=" + p(0), "-master.port.grpc=" + p(1),
		// Small volumes: the default reserves 30 GiB per volume.
		"-master.volumeSizeLimitMB=64", "-volume.max=16",
		"-volume.port=" + p(2), "-volume.port.grpc=" + p(3),
		"-filer", "-filer.port=" + p(4), "-filer.port.grpc=" + p(5),
		"-s3", "-s3.port=" + p(6), "-s3.port.grpc=" + p(7), "-s3.config=" + cfg,
		// The Iceberg and Lance endpoints are unused here.
		"-s3.port.iceberg=0", "-s3.port.lance=0"}, tlsArgs...)...)
	cmd.Dir = dir
	// SSE-S3 on: objects uploaded with x-amz-server-side-encryption: AES256
	// are stored encrypted and read back decrypted; others stay plain.
	// One volume per collection (bucket) at a time instead of weed's 7:
	// with -volume.max=16, 7 each let only two buckets ever take a write
	// ("No writable volumes and no free volumes left", an internal error
	// to the client), and a store holds the warm-up bucket and a bucket
	// per test that shares it.
	cmd.Env = append(os.Environ(), EnvSSEKey+"="+sseKey, "WEED_MASTER_VOLUME_GROWTH_COPY_1=1")
	cmd.Stdout, cmd.Stderr = log, log
	if s.p, err = proc.Start(cmd); err != nil {
		return nil, fmt.Errorf("objstore: start weed: %w", err)
	}
	s.Endpoint = scheme + IP + ":" + p(6)
	if err := s.waitReady(ctx); err != nil {
		s.Stop()
		out, _ := os.ReadFile(log.Name())
		return nil, fmt.Errorf("objstore: %w\n%s", err, tail(out, 3000))
	}
	s.warmUp()
	return s, nil
}

// warmUpBucket holds the one object warmUp writes.
const warmUpBucket = "objstore-warm-up"

// warmUp writes one object in the background, so that the caller's own
// first write does not pay for weed's start alone. A fresh weed answers
// reads within ~3 s but holds its first write ~8.5 s (measured): the
// master defers its first volume allocation for a heartbeat pulse, and the
// filer takes the S3 gateway's write locks only once it has registered
// with the master and the lock ring is broadcast. Both happen once per
// process, for any bucket: after them a new bucket's first write takes
// ~0.2 s. A caller that starts the store and then sets up etcd (most
// specs) thus finds it ready; one that writes at once waits as before
// (the write blocks, it does not fail). A failed warm-up is not reported:
// the caller's own write says what is wrong.
func (s *Server) warmUp() {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	s.stopWarmUp = cancel
	go func() {
		defer cancel()
		c, err := s.Client()
		if err != nil || c.MakeBucket(ctx, warmUpBucket, minio.MakeBucketOptions{Region: "us-east-1"}) != nil {
			return
		}
		_, _ = c.PutObject(ctx, warmUpBucket, "warm-up", strings.NewReader("warm-up"), 7, minio.PutObjectOptions{})
	}()
}

// writeIdentities writes weed's S3 identity file with one admin identity.
func writeIdentities(path, key, secret string) error {
	type cred struct {
		AccessKey string `json:"accessKey"`
		SecretKey string `json:"secretKey"`
	}
	type identity struct {
		Name        string   `json:"name"`
		Credentials []cred   `json:"credentials"`
		Actions     []string `json:"actions"`
	}
	b, err := json.Marshal(map[string]any{"identities": []identity{{Name: "admin",
		Credentials: []cred{{key, secret}}, Actions: []string{"Admin", "Read", "Write", "List", "Tagging"}}}})
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// waitReady polls until listing buckets succeeds: the gateway answers
// before the filer and a volume server are up.
func (s *Server) waitReady(ctx context.Context) error {
	c, err := s.Client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	var last error
	for {
		select {
		case <-s.p.Done():
			return fmt.Errorf("weed exited: %v", s.p.Err())
		default:
		}
		probe, cancelProbe := context.WithTimeout(ctx, 5*time.Second) // one request; the loop retries
		_, last = c.ListBuckets(probe)
		cancelProbe()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("S3 gateway not ready after %s: %v", startTimeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Client is an S3 client of the admin identity.
func (s *Server) Client() (*minio.Client, error) {
	tr, err := s.transport()
	if err != nil {
		return nil, err
	}
	host, secure := strings.TrimPrefix(s.Endpoint, "http://"), strings.HasPrefix(s.Endpoint, "https://")
	host = strings.TrimPrefix(host, "https://")
	return minio.New(host, &minio.Options{Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""),
		Region: "us-east-1", BucketLookup: minio.BucketLookupPath, Transport: tr, Secure: secure})
}

// MakeBucket creates a bucket.
func (s *Server) MakeBucket(ctx context.Context, name string) error {
	c, err := s.Client()
	if err != nil {
		return err
	}
	if err := c.MakeBucket(ctx, name, minio.MakeBucketOptions{Region: "us-east-1"}); err != nil {
		return fmt.Errorf("objstore: make bucket %s: %w", name, err)
	}
	return nil
}

// Stop ends the server at once (SIGKILL). Its data directory is thrown
// away after every use, so there is nothing to flush; and weed ignores
// SIGTERM for as long as any grace given it (5 s measured per Stop, ten
// of them in the agent's tests alone).
func (s *Server) Stop() {
	if s.stopWarmUp != nil {
		s.stopWarmUp()
	}
	if s.p != nil {
		s.p.Stop(0)
	}
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var out []int
	for range n {
		l, err := net.Listen("tcp", IP+":0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
