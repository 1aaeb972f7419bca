package etcdaccess

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Channels of a one-port forward in the channel protocol.
const (
	dataChannel  = 0
	errorChannel = 1
	// portPrefixLen is the little-endian port number the kubelet writes
	// first on each of its channels before any data.
	portPrefixLen = 2
)

// wsConn is one forwarded TCP connection carried by a WebSocket, as a
// net.Conn. A message on the error channel (e.g. nothing listens on the
// port) is returned by Read and Write in place of a bare EOF.
type wsConn struct {
	ws      *websocket.Conn
	desc    string
	remote  podAddr
	onClose func(*wsConn)

	readMu  sync.Mutex
	cur     io.Reader // the rest of the data message being read
	skip    [2]int    // prefix bytes still to drop, per channel
	readErr error     // the first error Read returned, returned from then on

	writeMu   sync.Mutex
	errMu     sync.Mutex
	remoteErr error
	closeOnce sync.Once
}

func newWSConn(ws *websocket.Conn, desc string, remote podAddr, onClose func(*wsConn)) *wsConn {
	return &wsConn{ws: ws, desc: desc, remote: remote, onClose: onClose,
		skip: [2]int{portPrefixLen, portPrefixLen}}
}

// Read returns data-channel bytes; a message on the error channel ends the
// connection with the kubelet's reason. The first error is final: gorilla
// panics on the 1000th read of a failed WebSocket, and a panic here would
// stop the manager of every workload cluster, so a failed wsConn no longer
// reads the socket.
func (c *wsConn) Read(p []byte) (int, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	if c.readErr != nil {
		return 0, c.readErr
	}
	n, err := c.read(p)
	c.readErr = err
	return n, err
}

func (c *wsConn) read(p []byte) (int, error) {
	for {
		if c.cur != nil {
			n, err := c.cur.Read(p)
			if errors.Is(err, io.EOF) {
				c.cur, err = nil, nil
			}
			if n > 0 || err != nil {
				return n, c.readError(err)
			}
			continue
		}
		if err := c.remoteError(); err != nil {
			return 0, err
		}
		if err := c.nextMessage(); err != nil {
			return 0, err
		}
	}
}

// nextMessage reads the next message's channel byte and either makes the
// message the current data or records it as the remote error.
func (c *wsConn) nextMessage() error {
	_, r, err := c.ws.NextReader()
	if err != nil {
		return c.readError(err)
	}
	var ch [1]byte
	if _, err := io.ReadFull(r, ch[:]); err != nil {
		return nil // an empty message carries nothing
	}
	if ch[0] != dataChannel && ch[0] != errorChannel {
		return nil // a channel this protocol version does not use
	}
	skipped, err := io.CopyN(io.Discard, r, int64(c.skip[ch[0]]))
	c.skip[ch[0]] -= int(skipped)
	if err != nil && !errors.Is(err, io.EOF) {
		return c.readError(err)
	}
	if ch[0] == dataChannel {
		c.cur = r
		return nil
	}
	msg, err := io.ReadAll(io.LimitReader(r, maxErrorMessage))
	if err != nil {
		return c.readError(err)
	}
	if len(msg) > 0 {
		c.errMu.Lock()
		c.remoteErr = fmt.Errorf("%s: %s", c.desc, msg)
		c.errMu.Unlock()
	}
	return nil
}

func (c *wsConn) remoteError() error {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	return c.remoteErr
}

// readError maps the end of the WebSocket to what a net.Conn reader expects:
// the kubelet's reason if it gave one, EOF for an orderly close.
func (c *wsConn) readError(err error) error {
	if err == nil {
		return nil
	}
	if remote := c.remoteError(); remote != nil {
		return remote
	}
	if websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway) || errors.Is(err, io.ErrUnexpectedEOF) {
		return io.EOF
	}
	return fmt.Errorf("%s: %w", c.desc, err)
}

// Write sends p on the data channel, in messages that each fit one frame
// (see wsWriteBuffer).
func (c *wsConn) Write(p []byte) (int, error) {
	if err := c.remoteError(); err != nil {
		return 0, err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	written := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), wsWriteBuffer-1)]
		if err := c.writeMessage(chunk); err != nil {
			if remote := c.remoteError(); remote != nil {
				err = remote
			}
			return written, err
		}
		written += len(chunk)
		p = p[len(chunk):]
	}
	return written, nil
}

func (c *wsConn) writeMessage(chunk []byte) error {
	w, err := c.ws.NextWriter(websocket.BinaryMessage)
	if err != nil {
		return fmt.Errorf("%s: %w", c.desc, err)
	}
	if _, err := w.Write([]byte{dataChannel}); err != nil {
		return fmt.Errorf("%s: %w", c.desc, err)
	}
	if _, err := w.Write(chunk); err != nil {
		return fmt.Errorf("%s: %w", c.desc, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("%s: %w", c.desc, err)
	}
	return nil
}

// Close says goodbye with a close frame, bounded by wsCloseWait, and closes
// the socket; the kubelet then closes its end of the Pod connection.
func (c *wsConn) Close() error {
	c.closeOnce.Do(func() {
		_ = c.ws.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(wsCloseWait))
		_ = c.ws.Close()
		if c.onClose != nil {
			c.onClose(c)
		}
	})
	return nil
}

func (c *wsConn) LocalAddr() net.Addr  { return c.ws.LocalAddr() }
func (c *wsConn) RemoteAddr() net.Addr { return c.remote }

// Deadlines are real: they apply to the socket to the apiserver. A read
// that times out ends the connection (gorilla keeps the first read error),
// which is what gRPC does with such a connection anyway.
func (c *wsConn) SetDeadline(t time.Time) error {
	if err := c.ws.SetReadDeadline(t); err != nil {
		return err
	}
	return c.ws.SetWriteDeadline(t)
}
func (c *wsConn) SetReadDeadline(t time.Time) error  { return c.ws.SetReadDeadline(t) }
func (c *wsConn) SetWriteDeadline(t time.Time) error { return c.ws.SetWriteDeadline(t) }
