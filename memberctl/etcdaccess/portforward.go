package etcdaccess

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// ErrDialerClosed is returned by DialPod after Close.
var ErrDialerClosed = errors.New("port-forward dialer is closed")

// errNoStreamReply: a stream pair was not answered within StreamTimeout.
var errNoStreamReply = errors.New("no reply from the kubelet")

// PortForwardOptions tunes a PortForwardDialer. Zero values take defaults.
type PortForwardOptions struct {
	// UpgradeTimeout bounds one SPDY upgrade through the apiserver: TCP and
	// TLS to the apiserver, its dial to the kubelet and the 101 response.
	// It is measured in milliseconds on a healthy cluster; the default 15 s
	// only stops a hung apiserver from holding every dial to its Pods.
	UpgradeTimeout time.Duration
	// StreamTimeout bounds creating the error+data stream pair on an
	// established connection (one round trip to the kubelet). Default 10 s,
	// below the 30 s that httpstream itself would wait.
	StreamTimeout time.Duration
	// IdleTimeout closes a Pod's shared connection once no stream has been
	// open on it for this long, so Pods that were deleted or are no longer
	// reconciled do not keep connections through the apiserver. Default 2 min.
	IdleTimeout time.Duration
}

func (o *PortForwardOptions) defaults() {
	if o.UpgradeTimeout <= 0 {
		o.UpgradeTimeout = 15 * time.Second
	}
	if o.StreamTimeout <= 0 {
		o.StreamTimeout = 10 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 2 * time.Minute
	}
}

// PortForwardDialer is a PodDialer that reaches Pods through the
// apiserver's pods/portforward subresource over SPDY. See the package doc.
type PortForwardDialer struct {
	cfg     *rest.Config
	base    *url.URL // apiserver URL, path prefix included
	apiPath string   // "/api/v1"
	opts    PortForwardOptions

	// ctx ends in-flight upgrades on Close.
	ctx    context.Context
	cancel context.CancelFunc
	reqID  atomic.Uint64  // requestID header; unique per stream pair
	wg     sync.WaitGroup // upgrade goroutines

	mu     sync.Mutex
	closed bool
	pods   map[string]*podConn // by namespace/pod
}

// podConn is the one shared SPDY connection to a Pod. Fields other than
// ready are written once before ready is closed, except streams and idle,
// which are guarded by PortForwardDialer.mu.
type podConn struct {
	key   string
	ready chan struct{}
	conn  httpstream.Connection
	err   error

	streams int         // stream pairs open or being opened
	idle    *time.Timer // runs while streams == 0
}

// NewPortForwardDialer returns a dialer that uses cfg, a workload cluster's
// apiserver config. Its user needs create (SPDY) on pods/portforward.
func NewPortForwardDialer(cfg *rest.Config, opts PortForwardOptions) (*PortForwardDialer, error) {
	c, base, apiPath, err := coreV1Config(cfg)
	if err != nil {
		return nil, err
	}
	// Fail now on bad TLS or auth settings rather than on the first dial.
	if _, _, err := spdy.RoundTripperFor(c); err != nil {
		return nil, fmt.Errorf("SPDY transport: %w", err)
	}
	opts.defaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &PortForwardDialer{
		cfg: c, base: base, apiPath: apiPath, opts: opts,
		ctx: ctx, cancel: cancel, pods: map[string]*podConn{},
	}, nil
}

// DialPod opens a new stream pair to port of the Pod on the Pod's shared
// connection, upgrading a new one first if there is none or it died.
func (d *PortForwardDialer) DialPod(ctx context.Context, namespace, pod string, port int) (net.Conn, error) {
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("pod %s/%s: invalid port %d", namespace, pod, port)
	}
	var err error
	// A second attempt covers a connection that died after it was handed
	// out but before its close was seen, e.g. the apiserver restarted.
	for attempt := 0; attempt < 2; attempt++ {
		var pc *podConn
		if pc, err = d.acquire(ctx, namespace, pod); err != nil {
			return nil, err
		}
		var c net.Conn
		if c, err = d.openStreams(ctx, pc, namespace, pod, port); err == nil {
			return c, nil
		}
		d.release(pc)
		if errors.Is(err, errNoStreamReply) {
			d.discard(pc)
			break
		}
		if !isClosed(pc.conn) || ctx.Err() != nil {
			break
		}
	}
	return nil, err
}

// discard closes a connection that left a stream pair unanswered, so that
// the next dial upgrades a new one. The kubelet's SPDY library hands each
// frame to its stream from one of five workers per connection, and a
// frame that nothing on its side reads (a data frame after the forward's
// target went away) blocks that worker for good, and with it the creation
// of every later stream whose ID falls on it: a fifth of the dials would
// each wait StreamTimeout, for as long as the connection is kept busy. The
// other forwards on it are reset, and their clients dial again.
func (d *PortForwardDialer) discard(pc *podConn) {
	d.mu.Lock()
	if d.pods[pc.key] == pc {
		delete(d.pods, pc.key)
	}
	if pc.idle != nil {
		pc.idle.Stop()
		pc.idle = nil
	}
	d.mu.Unlock()
	_ = pc.conn.Close()
}

// acquire returns the Pod's live connection with one stream reserved on it,
// waiting for an upgrade when needed. The reservation keeps the idle timer
// off; release gives it back.
func (d *PortForwardDialer) acquire(ctx context.Context, namespace, pod string) (*podConn, error) {
	key := namespace + "/" + pod
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, ErrDialerClosed
	}
	pc := d.pods[key]
	var dead httpstream.Connection
	if pc != nil && isReady(pc) && (pc.err != nil || isClosed(pc.conn)) {
		// Failed or died: upgrade again, lazily, on demand. A connection the
		// peer closed still holds its socket until Close is called.
		if pc.idle != nil {
			pc.idle.Stop()
		}
		dead, pc = pc.conn, nil
	}
	if pc == nil {
		pc = &podConn{key: key, ready: make(chan struct{})}
		d.pods[key] = pc
		d.wg.Add(1)
		go d.upgrade(pc, namespace, pod)
	}
	pc.streams++
	if pc.idle != nil {
		pc.idle.Stop()
		pc.idle = nil
	}
	d.mu.Unlock()
	if dead != nil {
		_ = dead.Close()
	}

	select {
	case <-pc.ready:
	case <-ctx.Done():
		// The upgrade goes on for other callers; it is bounded by UpgradeTimeout.
		d.release(pc)
		return nil, ctx.Err()
	}
	if pc.err != nil {
		d.release(pc)
		return nil, pc.err
	}
	return pc, nil
}

// release gives back a stream reserved by acquire.
func (d *PortForwardDialer) release(pc *podConn) {
	d.mu.Lock()
	defer d.mu.Unlock()
	pc.streams--
	if isReady(pc) {
		d.armIdleLocked(pc)
	}
}

// armIdleLocked starts the idle timer of a ready connection with no streams.
// Only ready connections get one, so the timer never races an upgrade.
func (d *PortForwardDialer) armIdleLocked(pc *podConn) {
	if pc.streams > 0 || pc.err != nil || d.closed || d.pods[pc.key] != pc {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(d.opts.IdleTimeout, func() {
		d.mu.Lock()
		// A stale timer (stopped too late) must not close a busy connection.
		if pc.idle != t || pc.streams > 0 || d.pods[pc.key] != pc {
			d.mu.Unlock()
			return
		}
		delete(d.pods, pc.key)
		d.mu.Unlock()
		_ = pc.conn.Close()
	})
	pc.idle = t
}

// upgrade dials the Pod's connection in the background. httpstream's Dial
// takes no context, so the request is built here with one that is bounded by
// UpgradeTimeout and cancelled by Close; callers select on their own ctx.
func (d *PortForwardDialer) upgrade(pc *podConn, namespace, pod string) {
	defer d.wg.Done()
	ctx, cancel := context.WithTimeout(d.ctx, d.opts.UpgradeTimeout)
	defer cancel()
	conn, err := d.dial(ctx, namespace, pod)
	if err != nil {
		err = fmt.Errorf("port-forward to pod %s/%s: %w", namespace, pod, err)
	}
	d.mu.Lock()
	if err == nil && d.closed {
		_ = conn.Close()
		conn, err = nil, ErrDialerClosed
	}
	pc.conn, pc.err = conn, err
	close(pc.ready)
	d.armIdleLocked(pc) // every waiter gave up: the connection starts idle
	d.mu.Unlock()
}

func (d *PortForwardDialer) dial(ctx context.Context, namespace, pod string) (httpstream.Connection, error) {
	// A fresh round tripper per connection: the SPDY round tripper keeps the
	// one connection it dialled, so it cannot be shared between upgrades.
	rt, upgrader, err := spdy.RoundTripperFor(d.cfg)
	if err != nil {
		return nil, err
	}
	u := portForwardURL(d.base, d.apiPath, namespace, pod)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return nil, err
	}
	conn, proto, err := spdy.Negotiate(upgrader, &http.Client{Transport: rt}, req, portforward.PortForwardProtocolV1Name)
	if err != nil {
		return nil, err
	}
	if proto != portforward.PortForwardProtocolV1Name {
		_ = conn.Close()
		return nil, fmt.Errorf("apiserver negotiated protocol %q, want %q", proto, portforward.PortForwardProtocolV1Name)
	}
	return conn, nil
}

// Close closes every connection, which resets every stream handed out, and
// waits for in-flight upgrades to end.
func (d *PortForwardDialer) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	pods := d.pods
	d.pods = nil
	for _, pc := range pods {
		if pc.idle != nil {
			pc.idle.Stop()
		}
	}
	d.mu.Unlock()
	d.cancel()
	for _, pc := range pods {
		if isReady(pc) && pc.conn != nil {
			_ = pc.conn.Close()
		}
	}
	d.wg.Wait()
	return nil
}

func isReady(pc *podConn) bool {
	select {
	case <-pc.ready:
		return true
	default:
		return false
	}
}

func isClosed(c httpstream.Connection) bool {
	if c == nil {
		return true
	}
	select {
	case <-c.CloseChan():
		return true
	default:
		return false
	}
}
