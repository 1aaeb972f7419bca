package etcdaccess

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
)

// channelProtocol is the Kubernetes WebSocket channel protocol, binary
// framing: every message is one channel byte followed by that channel's data.
// kube-apiserver proxies it untouched to the kubelet, which has served it for
// port-forward since long before SPDY was deprecated.
const channelProtocol = "v4.channel.k8s.io"

const (
	// wsWriteBuffer is the largest payload sent as one WebSocket frame. The
	// kubelet reads each frame as one message (golang.org/x/net/websocket),
	// so a message must never be fragmented: Write splits larger writes
	// into messages of at most this size, which fits gorilla's buffer. It
	// matches gRPC's 32 KiB write buffer, so a flush is usually one message.
	wsWriteBuffer = 32 << 10
	// wsReadBuffer is the per-connection read buffer. Messages of any size
	// are read through it; small is fine because gRPC reads into its own.
	wsReadBuffer = 4 << 10
	// wsCloseWait bounds sending the close frame in Close, so a peer that
	// stopped reading cannot hold Close.
	wsCloseWait = time.Second
)

// WebSocketOptions tunes a WebSocketDialer. Zero values take defaults.
type WebSocketOptions struct {
	// HandshakeTimeout bounds one dial: TCP and TLS to the apiserver, its
	// dial to the kubelet and the 101 response. It is milliseconds on a
	// healthy cluster; the default 15 s only stops a hung apiserver from
	// holding a gRPC connect attempt longer than its own backoff.
	HandshakeTimeout time.Duration
}

func (o *WebSocketOptions) defaults() {
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = 15 * time.Second
	}
}

// WebSocketDialer is a PodDialer that reaches Pods through the apiserver's
// pods/portforward subresource with the WebSocket channel protocol, one
// WebSocket per DialPod. See the package doc for why it is the default.
type WebSocketDialer struct {
	base      *url.URL // apiserver URL, path prefix included
	apiPath   string   // "/api/v1"
	transport *transport.Config
	tls       *tls.Config
	proxy     func(*http.Request) (*url.URL, error)
	opts      WebSocketOptions
	// writeBuffers is shared by every connection of the dialer: a buffer is
	// held only while a message is written, not for the connection's life.
	writeBuffers websocket.BufferPool

	mu     sync.Mutex
	closed bool
	conns  map[*wsConn]struct{}
}

// NewWebSocketDialer returns a dialer that uses cfg, a workload cluster's
// apiserver config. Its user needs get on pods/portforward.
func NewWebSocketDialer(cfg *rest.Config, opts WebSocketOptions) (*WebSocketDialer, error) {
	c, base, apiPath, err := coreV1Config(cfg)
	if err != nil {
		return nil, err
	}
	tc, err := c.TransportConfig()
	if err != nil {
		return nil, fmt.Errorf("transport config: %w", err)
	}
	// Fail now on bad TLS or auth settings rather than on the first dial.
	tlsCfg, err := transport.TLSConfigFor(tc)
	if err != nil {
		return nil, fmt.Errorf("TLS config: %w", err)
	}
	if _, err := transport.HTTPWrappersForConfig(tc, http.DefaultTransport); err != nil {
		return nil, fmt.Errorf("auth config: %w", err)
	}
	opts.defaults()
	proxy := c.Proxy
	if proxy == nil {
		proxy = http.ProxyFromEnvironment
	}
	return &WebSocketDialer{
		base: base, apiPath: apiPath, transport: tc, tls: tlsCfg, proxy: proxy, opts: opts,
		writeBuffers: &sync.Pool{}, conns: map[*wsConn]struct{}{},
	}, nil
}

// DialPod opens a WebSocket to port of the Pod through the apiserver.
func (d *WebSocketDialer) DialPod(ctx context.Context, namespace, pod string, port int) (net.Conn, error) {
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("pod %s/%s: invalid port %d", namespace, pod, port)
	}
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return nil, ErrDialerClosed
	}
	desc := fmt.Sprintf("port-forward to pod %s/%s port %d", namespace, pod, port)
	ws, err := d.handshake(ctx, namespace, pod, port)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", desc, err)
	}
	c := newWSConn(ws, desc, podAddr(fmt.Sprintf("%s/%s:%d", namespace, pod, port)), d.forget)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		_ = ws.Close()
		return nil, ErrDialerClosed
	}
	d.conns[c] = struct{}{}
	return c, nil
}

// handshake runs the upgrade through client-go's auth wrappers (bearer
// token, token file, exec plugin headers), with gorilla doing the WebSocket
// part; the connection is kept by the round tripper.
func (d *WebSocketDialer) handshake(ctx context.Context, namespace, pod string, port int) (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.HandshakeTimeout)
	defer cancel()
	u := portForwardURL(d.base, d.apiPath, namespace, pod)
	u.RawQuery = url.Values{"ports": {strconv.Itoa(port)}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	up := &upgrader{dialer: websocket.Dialer{
		Proxy: d.proxy, TLSClientConfig: d.tls, Subprotocols: []string{channelProtocol},
		ReadBufferSize: wsReadBuffer, WriteBufferSize: wsWriteBuffer, WriteBufferPool: d.writeBuffers,
	}}
	if d.transport.DialHolder != nil { // rest.Config.Dial, e.g. a custom network
		up.dialer.NetDialContext = d.transport.DialHolder.Dial
	}
	rt, err := transport.HTTPWrappersForConfig(d.transport, up)
	if err != nil {
		return nil, err
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	_ = resp.Body.Close()
	if up.conn.Subprotocol() != channelProtocol {
		_ = up.conn.Close()
		return nil, fmt.Errorf("apiserver negotiated protocol %q, want %q", up.conn.Subprotocol(), channelProtocol)
	}
	return up.conn, nil
}

func (d *WebSocketDialer) forget(c *wsConn) {
	d.mu.Lock()
	delete(d.conns, c)
	d.mu.Unlock()
}

// Close closes every connection handed out and fails later dials.
func (d *WebSocketDialer) Close() error {
	d.mu.Lock()
	d.closed = true
	conns := d.conns
	d.conns = map[*wsConn]struct{}{}
	d.mu.Unlock()
	for c := range conns {
		_ = c.Close()
	}
	return nil
}

// upgrader is the innermost http.RoundTripper: it dials the WebSocket with
// the request's headers (auth included by the wrappers) and keeps the
// connection. It serves one request.
type upgrader struct {
	dialer websocket.Dialer
	conn   *websocket.Conn
}

func (u *upgrader) RoundTrip(req *http.Request) (*http.Response, error) {
	wsURL := *req.URL
	switch wsURL.Scheme {
	case "https":
		wsURL.Scheme = "wss"
	case "http":
		wsURL.Scheme = "ws"
	default:
		return nil, fmt.Errorf("unknown URL scheme %q", wsURL.Scheme)
	}
	conn, resp, err := u.dialer.DialContext(req.Context(), wsURL.String(), req.Header)
	if err != nil {
		return nil, handshakeError(err, resp)
	}
	u.conn = conn
	return resp, nil
}

// handshakeError turns a refused upgrade into the apiserver's own message
// (e.g. `pods "x" not found`, or a forbidden verb), which is what a user
// needs in a condition.
func handshakeError(err error, resp *http.Response) error {
	if resp == nil || !errors.Is(err, websocket.ErrBadHandshake) {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
	var st metav1.Status
	if json.Unmarshal(body, &st) == nil && st.Message != "" {
		return fmt.Errorf("upgrade refused (%s): %s", resp.Status, st.Message)
	}
	if msg := strings.TrimSpace(string(body)); msg != "" {
		return fmt.Errorf("upgrade refused (%s): %s", resp.Status, msg)
	}
	return fmt.Errorf("upgrade refused (%s)", resp.Status)
}
