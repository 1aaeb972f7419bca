package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"
)

// dialer connects to the store within lim.ConnectTimeout, TCP and TLS
// together, and names the connect stage when it cannot.
type dialer struct {
	lim   S3Limits
	stall time.Duration
	tls   *tls.Config
}

// dial is the transport's DialContext: TCP only.
func (d dialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, d.lim.ConnectTimeout)
	defer cancel()
	return d.tcp(ctx, network, addr)
}

// dialTLS is the transport's DialTLSContext: TCP and the TLS handshake,
// under one ConnectTimeout.
func (d dialer) dialTLS(ctx context.Context, network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, d.lim.ConnectTimeout)
	defer cancel()
	c, err := d.tcp(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	cfg := d.tls.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(addr)
	}
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = c.Close()
		return nil, d.explain(ctx, err)
	}
	return tc, nil
}

func (d dialer) tcp(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, d.explain(ctx, err)
	}
	return &progressConn{Conn: c, stall: d.stall}, nil
}

// explain names the connect stage when its timeout ended err.
func (d dialer) explain(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &StageError{Stage: StageConnect, Limits: d.lim, Err: err}
	}
	return err
}

// meteredTransport bounds each request's stages after the connection:
// the response's first byte within FirstByteTimeout of the request's end,
// and the request's and the response's bodies each moving at least
// MinThroughput bytes/s over every ThroughputWindow while they move.
// Only a body in flight is measured, so the time the agent spends reading
// etcd between parts never counts against the store.
type meteredTransport struct {
	next http.RoundTripper
	lim  S3Limits
}

func (m meteredTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	w := &watch{lim: m.lim, cancel: cancel}
	hasBody := req.Body != nil && req.Body != http.NoBody
	// The stages start when the connection is up (the dialer bounds
	// that): the body moves once the headers are written, the first byte
	// is awaited once the whole request is.
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders: func() {
			if hasBody {
				w.enter(sending)
			}
		},
		WroteRequest: func(httptrace.WroteRequestInfo) { w.enter(awaiting) },
	})
	req = req.WithContext(ctx)
	if hasBody {
		req.Body = &meteredBody{ReadCloser: req.Body, w: w}
	}
	resp, err := m.next.RoundTrip(req)
	if err != nil {
		w.enter(idle)
		cancel(nil)
		return nil, w.explain(err)
	}
	w.enter(receiving)
	resp.Body = &meteredBody{ReadCloser: resp.Body, w: w, eof: func() { w.enter(idle) }, done: func() { w.enter(idle); cancel(nil) }}
	return resp, nil
}

type phase int

const (
	idle phase = iota
	sending
	awaiting
	receiving
)

// watch is one request's stage timer.
type watch struct {
	lim    S3Limits
	cancel context.CancelCauseFunc

	mu    sync.Mutex
	phase phase
	gen   int // ignores timers of an earlier phase
	moved int64
	timer *time.Timer
	fired error
}

// enter starts phase p and its timer, stopping the previous one.
func (w *watch) enter(p phase) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.phase == p || w.fired != nil {
		return
	}
	w.phase, w.moved = p, 0
	w.gen++
	if w.timer != nil {
		w.timer.Stop()
	}
	gen := w.gen
	switch p {
	case awaiting:
		w.timer = time.AfterFunc(w.lim.FirstByteTimeout, func() { w.expire(gen, StageFirstByte) })
	case sending, receiving:
		w.timer = time.AfterFunc(w.lim.ThroughputWindow, func() { w.tick(gen) })
	}
}

func (w *watch) add(n int) {
	w.mu.Lock()
	w.moved += int64(n)
	w.mu.Unlock()
}

// tick ends a throughput window: the request is cut if the window moved
// less than the floor, else the next window starts.
func (w *watch) tick(gen int) {
	w.mu.Lock()
	if gen != w.gen || w.fired != nil {
		w.mu.Unlock()
		return
	}
	if float64(w.moved) >= float64(w.lim.MinThroughput)*w.lim.ThroughputWindow.Seconds() {
		w.moved = 0
		w.timer = time.AfterFunc(w.lim.ThroughputWindow, func() { w.tick(gen) })
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	w.expire(gen, StageThroughput)
}

// expire cuts the request for stage, unless the phase moved on.
func (w *watch) expire(gen int, stage Stage) {
	w.mu.Lock()
	if gen != w.gen || w.fired != nil {
		w.mu.Unlock()
		return
	}
	err := &StageError{Stage: stage, Limits: w.lim}
	w.fired = err
	w.mu.Unlock()
	w.cancel(err)
}

// explain is err, or the stage error that cut the request.
func (w *watch) explain(err error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fired != nil {
		return w.fired
	}
	return err
}

// meteredBody counts the bytes of a body in flight for its watch; eof,
// if set, is called when it ends, done, if set, when it is closed.
type meteredBody struct {
	io.ReadCloser
	w         *watch
	eof, done func()
	once      sync.Once
}

func (b *meteredBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.w.add(n)
	if errors.Is(err, io.EOF) {
		if b.eof != nil {
			b.eof()
		}
	} else if err != nil {
		err = b.w.explain(err)
	}
	return n, err
}

func (b *meteredBody) Close() error {
	err := b.ReadCloser.Close()
	if b.done != nil {
		b.once.Do(b.done)
	}
	return err
}
