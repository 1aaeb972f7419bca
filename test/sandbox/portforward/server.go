package portforward

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	criportforward "k8s.io/cri-streaming/pkg/streaming/portforward"
)

// Lookup resolves a Pod port to the host:port the server dials for it.
type Lookup func(namespace, pod string, port int32) (addr string, err error)

const (
	// idleTimeout is the kubelet's default for streaming connections. The
	// client pings every 5 s anyway, so this only ends abandoned sessions.
	idleTimeout = 4 * time.Hour
	// streamCreationTimeout is how long a half-created stream pair may wait
	// for its partner; the kubelet default.
	streamCreationTimeout = 30 * time.Second
	// targetDialTimeout bounds the dial to the target so a black-holed
	// address fails the stream promptly with a message instead of hanging.
	targetDialTimeout = 5 * time.Second
)

// errClosed is reported to port-forward clients once Close has begun.
var errClosed = errors.New("sandbox kubelet is shutting down")

// connKey carries the raw connection into handlers, so a handler can
// register the connection it is about to hijack.
type connKey struct{}

// Server is a simulated kubelet that serves only port-forward.
type Server struct {
	lookup Lookup
	ln     net.Listener
	srv    *http.Server
	caPEM  []byte

	// ctx is cancelled by Close so that in-flight target dials stop.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	closed  bool
	conns   map[net.Conn]struct{} // client connections inside a handler
	targets map[net.Conn]struct{} // sockets to Pod targets
	wg      sync.WaitGroup        // handlers and copy goroutines
	serveWG sync.WaitGroup        // the Serve loop
}

// NewServer starts a simulated kubelet on 127.0.0.1 at a free port.
func NewServer(lookup Lookup) (*Server, error) {
	if lookup == nil {
		return nil, errors.New("lookup must not be nil")
	}
	cert, caPEM, err := selfSignedCert()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		lookup: lookup, ln: ln, caPEM: caPEM, ctx: ctx, cancel: cancel,
		conns: map[net.Conn]struct{}{}, targets: map[net.Conn]struct{}{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/portForward/{ns}/{pod}", s.handle)
	mux.HandleFunc("/portForward/{ns}/{pod}/{uid}", s.handle)
	s.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second, // only the upgrade request; the hijacked stream has none
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
		// The apiserver upgrades over HTTP/1.1 anyway; pinning it keeps
		// ALPN from ever choosing h2, where hijacking is impossible.
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cert},
			NextProtos:   []string{"http/1.1"},
			MinVersion:   tls.VersionTLS12,
		},
	}
	s.serveWG.Add(1)
	go func() {
		defer s.serveWG.Done()
		_ = s.srv.Serve(tls.NewListener(ln, s.srv.TLSConfig))
	}()
	return s, nil
}

// Port is the TCP port to put in the Node's
// status.daemonEndpoints.kubeletEndpoint.port.
func (s *Server) Port() int32 { return int32(s.ln.Addr().(*net.TCPAddr).Port) }

// CAPEM is the server's self-signed certificate in PEM, usable as the
// apiserver's --kubelet-certificate-authority.
func (s *Server) CAPEM() []byte { return append([]byte(nil), s.caPEM...) }

// Close stops the server and ends every forwarded connection, waiting for
// all goroutines the server started.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.cancel()
	// Closing the client connections ends each SPDY session, so
	// ServePortForward returns; closing the targets ends the copies.
	for c := range s.conns {
		_ = c.Close()
	}
	for c := range s.targets {
		_ = c.Close()
	}
	s.mu.Unlock()
	err := s.srv.Close() // the listener and connections not yet hijacked
	s.serveWG.Wait()
	s.wg.Wait()
	return err
}

// track registers c to be closed by Close; false means Close has begun and
// the caller must close c itself.
func (s *Server) track(set map[net.Conn]struct{}, c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	set[c] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *Server) untrack(set map[net.Conn]struct{}, c net.Conn) {
	s.mu.Lock()
	delete(set, c)
	s.mu.Unlock()
	s.wg.Done()
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	c, _ := r.Context().Value(connKey{}).(net.Conn)
	if c == nil || !s.track(s.conns, c) {
		http.Error(w, errClosed.Error(), http.StatusServiceUnavailable)
		return
	}
	defer s.untrack(s.conns, c)
	ns, pod, uid := r.PathValue("ns"), r.PathValue("pod"), r.PathValue("uid")
	opts, err := criportforward.NewV4Options(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// Blocks until the SPDY session ends: the kubelet's own defaults.
	criportforward.ServePortForward(w, r, forwarder{s}, ns+"/"+pod, uid, opts,
		idleTimeout, streamCreationTimeout, criportforward.SupportedProtocols)
}

// forwarder adapts Server to criportforward.PortForwarder without exporting
// the method on Server.
type forwarder struct{ s *Server }

// PortForward connects one data stream to the Pod port's target. An error
// returned here is written to the client's error stream by ServePortForward.
func (f forwarder) PortForward(_ context.Context, name, _ string, port int32, stream io.ReadWriteCloser) error {
	s := f.s
	ns, pod, _ := strings.Cut(name, "/")
	addr, err := s.lookup(ns, pod, port)
	if err != nil {
		return err
	}
	d := net.Dialer{Timeout: targetDialTimeout}
	target, err := d.DialContext(s.ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("dial %s: %w", addr, err)
	}
	if !s.track(s.targets, target) {
		_ = target.Close()
		return errClosed
	}
	done := make(chan struct{}, 2)
	// The stream→target copy can outlive this call: it ends only when the
	// client closes or resets the stream, or the session ends. It is
	// counted in s.wg (through track) so Close still waits for it.
	go func() {
		defer s.untrack(s.targets, target)
		_, _ = io.Copy(target, stream)
		done <- struct{}{}
		_ = target.Close() // wakes the other copy too
		// Go on reading what the client still sends until it closes or
		// resets the stream, or the session ends. spdystream hands each
		// data frame to its stream's reader from one of five frame
		// workers per session, and a frame nobody reads blocks that
		// worker for good, with every later frame of a fifth of the
		// session's streams: their creation, data and resets. A client
		// that wrote once more after its target went away (etcd killed
		// under a gRPC connection) then found new forwards never answered,
		// and Close waited for the blocked session forever (CI-O).
		_, _ = io.Copy(io.Discard, stream)
	}()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_, _ = io.Copy(stream, target)
		done <- struct{}{}
	}()
	<-done
	// Either direction ended: close the target so the other copy ends, and
	// return so ServePortForward half-closes the stream towards the client.
	_ = target.Close()
	return nil
}

// selfSignedCert makes an ECDSA P-256 certificate for 127.0.0.1 that is its
// own CA, so that the apiserver can be told to verify it.
func selfSignedCert() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "sandbox-kubelet"},
		NotBefore:             now.Add(-time.Hour), // tolerate clock skew between processes
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	return cert, certPEM, err
}
