package etcdaccess

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// What a workload apiserver sends back on a port-forward is untrusted: a
// malicious or broken one controls every byte after the handshake. These
// targets feed wsConn (WebSocket channel protocol) and streamConn (SPDY
// error stream) such bytes and check what the manager makes of them.

// fuzzDesc is the connection description that prefixes remote errors.
const fuzzDesc = "port-forward to pod ns/p port 2379"

// readAllocBudget bounds what reading one forwarded connection may allocate,
// whatever the peer sends: the error message kept (maxErrorMessage, its
// growth while read and its copy in the error) and scratch buffers, plus
// perFrameAlloc for each frame (a message reader, a pong). A message held
// in full would exceed it: the seeds send 1 MiB ones in one frame.
const (
	readAllocBudget = 8*maxErrorMessage + 64<<10
	perFrameAlloc   = 512
)

// FuzzWSConnRead serves wsConn a scripted WebSocket stream (see wsScript)
// and checks that, whatever the frames:
//   - Read never returns more than asked, never (0, nil), and never more
//     data in total than the stream holds; an error is final, and reading
//     on after it returns it again (a thousand times, without panicking);
//   - an error message keeps at most maxErrorMessage bytes of the peer's;
//   - reading allocates at most readAllocBudget, whatever the sizes the
//     frames declare or carry;
//   - for a script of well-formed frames, the data is exactly the data
//     channel's bytes without the port prefix, followed by the first
//     non-empty error-channel message, or by io.EOF on a normal close;
//   - a malformed frame (or an abnormal close) ends the data with an error,
//     never with io.EOF, which would pass for an orderly end.
func FuzzWSConnRead(f *testing.F) {
	msg := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	op := func(h byte, chunk []byte, rep byte) []byte { return msg([]byte{h, byte(len(chunk)), rep}, chunk) }
	etcd := []byte("\x00\x5b\x09PRI * HTTP/2.0") // data channel, port 2379 LE, then gRPC bytes
	refused := []byte("\x01\x5b\x09error forwarding port 2379 to pod: connection refused")
	f.Add(op(0, etcd, 0), uint16(4096))
	f.Add(msg(op(0, etcd, 0), op(0, []byte{0, 'a', 'b'}, 0), op(0, refused, 0)), uint16(1))
	f.Add(msg(op(0x60, etcd, 200), op(0x84, []byte("ping"), 0), op(2, []byte{0, 'z'}, 3)), uint16(7))
	f.Add(msg(op(0, []byte{0}, 0), op(0, []byte{0, 0x5b}, 0), op(0, []byte{0, 9, 'd'}, 0)), uint16(2)) // prefix split over messages
	f.Add(msg(op(0, []byte{1, 0x5b, 9}, 0), op(0, []byte{7, 'x'}, 0), op(0, etcd, 0)), uint16(100))    // empty error, unused channel
	f.Add(op(0x10, []byte{1, 0x5b, 9}, 255), uint16(512))                                              // a 1 MiB error message
	f.Add(msg(op(0, etcd, 0), op(0x70, []byte{0, 0x5b, 9}, 255)), uint16(65535))                       // 1 MiB of data, fragmented
	for kind := range byte(wsMalformedKinds) {
		f.Add(msg(op(0, etcd, 0), op(6, nil, kind)), uint16(64))
	}
	f.Add(msg(op(0, etcd, 0), op(7, []byte{0x82, 0x7f, 0, 0, 1}, 0)), uint16(64)) // raw: a header cut short
	f.Fuzz(func(t *testing.T, script []byte, readSize uint16) {
		sc := parseWSScript(script)
		c := newWSConn(dialScripted(t, sc.stream), fuzzDesc, podAddr("ns/p:2379"), nil)
		defer c.Close()
		buf := make([]byte, int(readSize)%(64<<10)+1)
		var total int
		var err error
		before := allocated()
		for reads := 0; err == nil; reads++ {
			if reads > len(sc.stream)+1 {
				t.Fatalf("%d reads and no end: %d bytes of data so far", reads, total)
			}
			var n int
			n, err = c.Read(buf)
			if n < 0 || n > len(buf) || (n == 0 && err == nil) {
				t.Fatalf("Read(%d bytes) = %d, %v", len(buf), n, err)
			}
			if !sc.raw && !bytes.Equal(buf[:n], sc.data[min(total, len(sc.data)):min(total+n, len(sc.data))]) {
				t.Fatalf("data differs at offset %d: got %q", total, buf[:n])
			}
			total += n
		}
		if got, budget := allocated()-before, uint64(readAllocBudget+perFrameAlloc*sc.frames); got > budget {
			t.Fatalf("reading a %d-byte stream of %d frames allocated %d bytes, budget %d", len(sc.stream), sc.frames, got, budget)
		}
		if total > len(sc.stream) {
			t.Fatalf("read %d bytes of data from a %d-byte stream", total, len(sc.stream))
		}
		if len(err.Error()) > len(fuzzDesc)+maxErrorMessage+256 {
			t.Fatalf("error of %d bytes, more than the %d kept of a message", len(err.Error()), maxErrorMessage)
		}
		// A caller may read a failed connection again, even in a loop: it
		// must get the error each time (gorilla panics on the 1000th read
		// of a failed WebSocket, which would take the manager down).
		for range 1000 {
			if n, again := c.Read(buf); n != 0 || again == nil || again.Error() != err.Error() {
				t.Fatalf("Read after %v = %d, %v; want the error again", err, n, again)
			}
		}
		if sc.raw {
			return
		}
		switch {
		case total != len(sc.data):
			t.Fatalf("read %d bytes of data, want %d", total, len(sc.data))
		case sc.errMsg != nil:
			if want := fuzzDesc + ": " + string(sc.errMsg); err.Error() != want {
				t.Fatalf("error %.200q..., want %.200q...", err, want)
			}
		case sc.bad && errors.Is(err, io.EOF):
			t.Fatalf("a malformed stream ended in %v, as if it were closed normally", err)
		case !sc.bad && err != io.EOF:
			t.Fatalf("a normally closed stream ended in %v, want io.EOF", err)
		}
	})
}

// allocated is the process's total heap allocation so far.
func allocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// wsScript is a fuzz input turned into the frames a workload apiserver
// sends after the handshake, with what wsConn must make of them. The input
// is a sequence of ops, each a header byte h, a chunk length n, a repeat
// count rep and n bytes of chunk. The low 3 bits of h pick the op:
//
//	0-3: a data message (2: text, else binary) of the chunk followed by rep
//	     'x' bytes (rep*4096 if h&0x10), in (h>>5)&3+1 frames, with a ping
//	     between fragments if h&0x80;
//	4, 5: a ping, a pong, with the chunk (up to 125 bytes);
//	6:   malformed frame rep%wsMalformedKinds; the script ends there;
//	7:   the chunk as raw bytes: what follows is no longer modelled.
//
// A script that ends without a malformed frame ends with a normal close.
type wsScript struct {
	stream []byte
	data   []byte // the data channel's bytes, without the port prefix
	errMsg []byte // the first non-empty error-channel message, capped
	bad    bool   // the stream ends in a malformed frame or an abnormal close
	raw    bool   // raw bytes: only the properties of every stream apply
	frames int    // frames in stream, at most
	skip   [2]int // port prefix bytes still to drop, per channel
}

// wsMaxStream keeps a fuzz input's stream to a size the fuzzer runs fast.
const wsMaxStream = 2 << 20

func parseWSScript(s []byte) *wsScript {
	sc := &wsScript{skip: [2]int{portPrefixLen, portPrefixLen}}
	for len(s) >= 3 && len(sc.stream) < wsMaxStream && !sc.bad {
		h, n, rep := s[0], int(s[1]), int(s[2])
		n = min(n, len(s)-3)
		chunk := s[3 : 3+n]
		s = s[3+n:]
		switch h & 7 {
		case 4, 5:
			sc.stream = append(sc.stream, wsFrame(true, byte(websocket.PingMessage+int(h&7)-4), chunk[:min(n, 125)])...)
			sc.frames++
		case 6:
			sc.stream = append(sc.stream, wsMalformed(rep%wsMalformedKinds)...)
			sc.bad = true
			sc.frames += 2
		case 7:
			sc.stream = append(sc.stream, chunk...)
			sc.raw = true
			sc.frames += n/2 + 1 // a frame header is at least 2 bytes
		default:
			fill := rep
			if h&0x10 != 0 {
				fill *= 4096
			}
			m := append(append(make([]byte, 0, n+fill), chunk...), bytes.Repeat([]byte{'x'}, fill)...)
			opcode := byte(websocket.BinaryMessage)
			if h&7 == 2 {
				opcode = websocket.TextMessage
			}
			frags := int(h>>5&3) + 1
			sc.stream = append(sc.stream, wsMessage(opcode, m, frags, h&0x80 != 0)...)
			sc.frames += 2 * frags
			sc.deliver(m)
		}
	}
	if !sc.bad {
		sc.stream = append(sc.stream, wsFrame(true, websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))...)
		sc.frames++
	}
	return sc
}

// deliver is the channel protocol as the kubelet speaks it: one channel
// byte per message, a 2-byte port prefix first on each channel, the first
// error message ends the connection.
func (sc *wsScript) deliver(m []byte) {
	if sc.errMsg != nil || len(m) == 0 || m[0] > errorChannel {
		return
	}
	ch, rest := m[0], m[1:]
	k := min(sc.skip[ch], len(rest))
	sc.skip[ch] -= k
	rest = rest[k:]
	if ch == dataChannel {
		sc.data = append(sc.data, rest...)
	} else if len(rest) > 0 {
		sc.errMsg = rest[:min(len(rest), maxErrorMessage)]
	}
}

// wsMessage frames m in frags frames, a ping between them if pings.
func wsMessage(opcode byte, m []byte, frags int, pings bool) []byte {
	var out []byte
	for i := range frags {
		part := m[len(m)*i/frags : len(m)*(i+1)/frags]
		op := opcode
		if i > 0 {
			op = 0 // continuation
			if pings {
				out = append(out, wsFrame(true, websocket.PingMessage, []byte("p"))...)
			}
		}
		out = append(out, wsFrame(i == frags-1, op, part)...)
	}
	return out
}

// wsFrame is one unmasked frame, as a server sends it.
func wsFrame(fin bool, opcode byte, payload []byte) []byte {
	b := opcode
	if fin {
		b |= 0x80
	}
	out := []byte{b}
	switch n := len(payload); {
	case n < 126:
		out = append(out, byte(n))
	case n <= 0xffff:
		out = binary.BigEndian.AppendUint16(append(out, 126), uint16(n))
	default:
		out = binary.BigEndian.AppendUint64(append(out, 127), uint64(n))
	}
	return append(out, payload...)
}

const wsMalformedKinds = 13

// wsMalformed is a frame (or the end of a stream) that RFC 6455 forbids a
// server to send, or an abnormal close; wsConn must end in an error.
func wsMalformed(kind int) []byte {
	switch kind {
	case 0: // masked, from a server
		return []byte{0x82, 0x80 | 3, 1, 2, 3, 4, 0, 0, 0}
	case 1: // RSV1 without negotiated compression
		return []byte{0xc2, 1, 0}
	case 2: // RSV2 and RSV3
		return []byte{0xb2, 1, 0}
	case 3: // a reserved opcode
		return []byte{0x83, 0}
	case 4: // a control frame over 125 bytes
		return append([]byte{0x89, 126, 0, 126}, make([]byte, 126)...)
	case 5: // a fragmented control frame
		return []byte{0x09, 0}
	case 6: // a continuation with no message begun
		return []byte{0x80, 1, 0}
	case 7: // a new message before the last one's final frame
		return []byte{0x02, 1, 7, 0x82, 1, 0}
	case 8: // a frame that promises a TiB and ends
		return binary.BigEndian.AppendUint64([]byte{0x82, 127}, 1<<40)
	case 9: // a 64-bit length with the top bit set
		return binary.BigEndian.AppendUint64([]byte{0x82, 127}, 1<<63|5)
	case 10: // a close code no endpoint may send
		return wsFrame(true, websocket.CloseMessage, websocket.FormatCloseMessage(1005, ""))
	case 11: // an abnormal close
		return wsFrame(true, websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseInternalServerErr, "boom"))
	default: // a header cut short
		return []byte{0x82}
	}
}

// dialScripted opens a gorilla client WebSocket to a fake apiserver that
// accepts the handshake, then sends stream and ends.
func dialScripted(t *testing.T, stream []byte) *websocket.Conn {
	d := websocket.Dialer{ReadBufferSize: wsReadBuffer, WriteBufferSize: wsWriteBuffer,
		NetDial: func(string, string) (net.Conn, error) { return &scriptedConn{stream: stream}, nil }}
	ws, _, err := d.Dial("ws://apiserver/api/v1/namespaces/ns/pods/p/portforward", nil)
	if err != nil {
		t.Fatalf("handshake with the scripted apiserver: %v", err)
	}
	return ws
}

// scriptedConn is the apiserver's end as bytes: it answers the client's
// upgrade request, then serves the stream; what the client writes after
// the request (pongs, the close frame) is dropped.
type scriptedConn struct {
	req    []byte
	stream []byte
	out    io.Reader // the handshake response and the stream, once asked
}

func (c *scriptedConn) Read(p []byte) (int, error) {
	if c.out == nil {
		r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(c.req)))
		if err != nil {
			return 0, err
		}
		sum := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		resp := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
			"Sec-WebSocket-Accept: " + base64.StdEncoding.EncodeToString(sum[:]) + "\r\n\r\n"
		c.out = io.MultiReader(strings.NewReader(resp), bytes.NewReader(c.stream))
	}
	return c.out.Read(p)
}

func (c *scriptedConn) Write(p []byte) (int, error) {
	if c.out == nil {
		c.req = append(c.req, p...)
	}
	return len(p), nil
}

func (c *scriptedConn) Close() error                     { return nil }
func (c *scriptedConn) LocalAddr() net.Addr              { return podAddr("local") }
func (c *scriptedConn) RemoteAddr() net.Addr             { return podAddr("apiserver") }
func (c *scriptedConn) SetDeadline(time.Time) error      { return nil }
func (c *scriptedConn) SetReadDeadline(time.Time) error  { return nil }
func (c *scriptedConn) SetWriteDeadline(time.Time) error { return nil }
