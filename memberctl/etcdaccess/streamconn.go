package etcdaccess

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
)

// remoteErrorWait is how long a failed Read waits for the kubelet's error
// message. The kubelet writes the message and resets the data stream at
// about the same time; without the wait the caller sees a bare EOF instead of
// the reason (client-go's port-forward waits the same second).
const remoteErrorWait = time.Second

// openStreams creates the error+data stream pair that carries one TCP
// connection to port. CreateStream takes no context, so it runs in a
// goroutine; when the caller gives up first, that goroutine resets whatever
// it still creates.
func (d *PortForwardDialer) openStreams(ctx context.Context, pc *podConn, namespace, pod string, port int) (net.Conn, error) {
	desc := fmt.Sprintf("port-forward to pod %s/%s port %d", namespace, pod, port)
	id := d.reqID.Add(1)
	type result struct {
		errS, data httpstream.Stream
		err        error
	}
	ch := make(chan result)
	abandon := make(chan struct{})
	go func() {
		var r result
		r.errS, r.data, r.err = createPair(pc.conn, port, id)
		select {
		case ch <- r:
		case <-abandon:
			if r.err == nil {
				resetStreams(pc.conn, r.data, r.errS)
			}
		}
	}()
	timer := time.NewTimer(d.opts.StreamTimeout)
	defer timer.Stop()
	var err error
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("%s: %w", desc, r.err)
		}
		c := &streamConn{d: d, pc: pc, errS: r.errS, data: r.data, desc: desc,
			remote: podAddr(fmt.Sprintf("%s/%s:%d", namespace, pod, port)), errDone: make(chan struct{})}
		go c.readErrors()
		return c, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = fmt.Errorf("%w within %s", errNoStreamReply, d.opts.StreamTimeout)
	case <-pc.conn.CloseChan():
		err = errors.New("connection closed")
	}
	close(abandon)
	return nil, fmt.Errorf("%s: creating streams: %w", desc, err)
}

// createPair opens the streams the kubelet pairs by requestID.
func createPair(conn httpstream.Connection, port int, id uint64) (errS, data httpstream.Stream, err error) {
	h := http.Header{}
	h.Set(corev1.StreamType, corev1.StreamTypeError)
	h.Set(corev1.PortHeader, strconv.Itoa(port))
	h.Set(corev1.PortForwardRequestIDHeader, strconv.FormatUint(id, 10))
	if errS, err = conn.CreateStream(h); err != nil {
		return nil, nil, fmt.Errorf("error stream: %w", err)
	}
	// Nothing is ever written on the error stream; half-closing it says so.
	_ = errS.Close()
	h = h.Clone()
	h.Set(corev1.StreamType, corev1.StreamTypeData)
	if data, err = conn.CreateStream(h); err != nil {
		// The kubelet may fail the forward (e.g. nothing listens on the
		// port) and reset the data stream before it has replied to it; the
		// reason is then on the error stream, not in "stream reset".
		if msg := readWithin(errS, remoteErrorWait); msg != "" {
			err = errors.New(msg)
		}
		resetStreams(conn, errS)
		return nil, nil, fmt.Errorf("data stream: %w", err)
	}
	return errS, data, nil
}

// maxErrorMessage bounds what is kept of an error channel or stream of a
// port-forward: the kubelet writes a line there ("error forwarding port
// ..."); a workload apiserver that streams without end must not make the
// manager, which every workload cluster shares, hold it all (security
// review M5). The rest is left unread.
const maxErrorMessage = 16 << 10

// readWithin returns what s carries until it ends or d passes. The reader
// goroutine it starts ends when the caller resets s.
func readWithin(s httpstream.Stream, d time.Duration) string {
	ch := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(s, maxErrorMessage))
		ch <- b
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case b := <-ch:
		return string(b)
	case <-t.C:
		return ""
	}
}

// resetStreams tears streams down fully and forgets them, so the shared
// connection neither waits for them on Close nor keeps them in its map.
func resetStreams(conn httpstream.Connection, streams ...httpstream.Stream) {
	for _, s := range streams {
		_ = s.Reset()
	}
	conn.RemoveStreams(streams...)
}

// streamConn is a net.Conn over one data stream. Its error stream carries
// at most one message from the kubelet, e.g. that the target refused the
// dial; that message replaces the bare EOF or reset in Read and Write.
type streamConn struct {
	d          *PortForwardDialer
	pc         *podConn
	errS, data httpstream.Stream
	desc       string
	remote     podAddr

	errDone   chan struct{} // closed when readErrors is done
	remoteErr error         // written before errDone is closed
	closeOnce sync.Once
}

var _ net.Conn = (*streamConn)(nil)

// readErrors ends when the kubelet closes the error stream (the forward is
// over), when Close resets it, or when the connection dies.
func (c *streamConn) readErrors() {
	defer close(c.errDone)
	msg, _ := io.ReadAll(io.LimitReader(c.errS, maxErrorMessage))
	if len(msg) > 0 {
		c.remoteErr = fmt.Errorf("%s: %s", c.desc, msg)
		// The kubelet sends nothing more: wake a Read blocked on data.
		_ = c.data.Reset()
	}
}

func (c *streamConn) Read(p []byte) (int, error) {
	n, err := c.data.Read(p)
	if err != nil {
		t := time.NewTimer(remoteErrorWait)
		defer t.Stop()
		select {
		case <-c.errDone:
			if c.remoteErr != nil {
				return n, c.remoteErr
			}
		case <-t.C:
		}
	}
	return n, err
}

func (c *streamConn) Write(p []byte) (int, error) {
	n, err := c.data.Write(p)
	if err != nil {
		select {
		case <-c.errDone:
			if c.remoteErr != nil {
				return n, c.remoteErr
			}
		default:
		}
	}
	return n, err
}

// Close ends this TCP connection only; the shared SPDY connection stays.
func (c *streamConn) Close() error {
	c.closeOnce.Do(func() {
		_ = c.data.Close() // FIN first, as client-go does, so the kubelet's copy ends cleanly
		resetStreams(c.pc.conn, c.data, c.errS)
		c.d.release(c.pc)
	})
	return nil
}

func (c *streamConn) LocalAddr() net.Addr  { return podAddr("local") }
func (c *streamConn) RemoteAddr() net.Addr { return c.remote }

// Deadlines are accepted and ignored: SPDY streams have none. gRPC does not
// rely on them after the handshake (keepalive pings detect a dead peer), and
// the handshake is bounded by its context, which closes the connection.
func (c *streamConn) SetDeadline(time.Time) error      { return nil }
func (c *streamConn) SetReadDeadline(time.Time) error  { return nil }
func (c *streamConn) SetWriteDeadline(time.Time) error { return nil }

// podAddr names the far end of a forwarded connection, "ns/pod:port".
type podAddr string

func (a podAddr) Network() string { return "portforward" }
func (a podAddr) String() string  { return string(a) }
