package etcdaccess

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/moby/spdystream/spdy"
	"k8s.io/apimachinery/pkg/util/httpstream"
	spdyconn "k8s.io/apimachinery/pkg/util/httpstream/spdy"
)

// spdyFrameAlloc is what the SPDY library may allocate for one frame
// before it has read a byte of its payload: spdystream makes a data frame's
// buffer at the length its 8-byte header declares, up to 2^24-1 bytes
// (spdy.MaxDataLength). So one malicious frame header costs 16 MiB whatever
// follows it; one at a time, since the next frame is not parsed before
// this one's payload has arrived. spdyPerInputByte bounds the rest: what
// the bytes actually sent cost (frames queued, header blocks inflated by
// zlib, copies into the streams and the error message).
const (
	spdyFrameAlloc   = spdy.MaxDataLength
	spdyPerInputByte = 64
	spdyFixedAlloc   = 4 << 20 // the connection's goroutines, zlib state, timers
)

// spdyQuiet is how long the fake apiserver waits for the client's next
// stream before it sends the rest anyway, and how long the client side
// waits for streams before giving up as openStreams does on StreamTimeout.
const spdyQuiet = 10 * time.Millisecond

// FuzzSPDYPortForward plays a workload apiserver on the SPDY connection of
// a port-forward: after the client's first SYN_STREAM (the error stream) it
// sends afterErr, after the second (the data stream) afterData, whatever
// those bytes are (frames of any type, length and stream, compressed
// header blocks, garbage), then hangs up. The client side is what the
// manager runs: the library's client connection (k8s.io/apimachinery's
// httpstream/spdy over moby/spdystream), createPair for the stream pair,
// and a streamConn reading the error stream and the data. It checks that
// whatever the server sends:
//   - nothing panics, and closing the connection (as the dialer does on
//     Close) ends the streams' readers and the connection's goroutines
//     within a bound: no hang. A stream the server never answers is
//     abandoned as openStreams abandons it: the library's CreateStream
//     returns only after its own 30 s, whether or not the connection is
//     closed, so it is bounded, but not by Close;
//   - Read never returns more than asked, nor (0, nil), and the data read
//     is never more than the server sent;
//   - a remote error keeps at most maxErrorMessage bytes of the server's;
//   - the whole exchange allocates within spdyFrameAlloc per frame header
//     in flight plus spdyPerInputByte per byte sent: no amplification.
func FuzzSPDYPortForward(f *testing.F) {
	for _, s := range spdySeeds(f) {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, afterErr, afterData []byte) {
		sent := len(afterErr) + len(afterData)
		// Whatever blocks past the bounds below is a hang, wherever it is.
		watchdog := time.AfterFunc(30*time.Second, func() { panic("hung:\n" + goroutines()) })
		defer watchdog.Stop()
		before := allocated()
		clientSide, serverSide := net.Pipe()
		srvDone := make(chan struct{})
		go func() {
			defer close(srvDone)
			fakeSPDYServer(serverSide, afterErr, afterData)
		}()
		conn, err := spdyconn.NewClientConnection(clientSide)
		if err != nil {
			t.Fatalf("client connection: %v", err)
		}

		done := make(chan string, 1)
		go func() { done <- readPortForward(conn, sent) }()
		var problem string
		select {
		case problem = <-done:
		case <-time.After(10 * time.Second):
			_ = conn.Close()
			select {
			case problem = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("reading the port-forward hangs after the connection was closed:\n%s", goroutines())
			}
		}
		_ = conn.Close()
		select {
		case <-srvDone:
		case <-time.After(10 * time.Second):
			t.Fatalf("the connection's goroutines did not end after Close:\n%s", goroutines())
		}
		if problem != "" {
			t.Fatal(problem)
		}
		if got, budget := allocated()-before, uint64(spdyFixedAlloc+2*spdyFrameAlloc+spdyPerInputByte*sent); got > budget {
			t.Fatalf("%d bytes from the server allocated %d bytes, budget %d", sent, got, budget)
		}
	})
}

// readPortForward does what openStreams and a streamConn's reader do on
// conn, bounded as they are, and says what went wrong ("" if nothing).
// sent is how many bytes the server sends in all.
func readPortForward(conn httpstream.Connection, sent int) string {
	type result struct {
		errS, data httpstream.Stream
		err        error
	}
	pair := make(chan result, 1)
	go func() {
		var r result
		r.errS, r.data, r.err = createPair(conn, 2379, 1)
		pair <- r
	}()
	var s result
	select {
	case s = <-pair:
	case <-time.After(4 * spdyQuiet):
		// openStreams gives up on StreamTimeout and abandons createPair,
		// as here: the library's CreateStream waits for a reply for its
		// own 30 s (createStreamResponseTimeout) even once the connection
		// is closed, so that goroutine ends then, not at Close.
		return ""
	}
	if s.err != nil {
		return ""
	}
	c := &streamConn{errS: s.errS, data: s.data, desc: fuzzDesc, remote: podAddr("ns/p:2379"), errDone: make(chan struct{})}
	go c.readErrors()
	buf := make([]byte, 512)
	total := 0
	for reads := 0; ; reads++ {
		n, err := c.Read(buf)
		if n < 0 || n > len(buf) || (n == 0 && err == nil) {
			return fmt.Sprintf("Read(%d bytes) = %d, %v", len(buf), n, err)
		}
		if total += n; total > sent {
			return fmt.Sprintf("read %d bytes of data, more than the %d the server sent", total, sent)
		}
		if err != nil {
			if len(err.Error()) > len(fuzzDesc)+2+maxErrorMessage && strings.HasPrefix(err.Error(), fuzzDesc) {
				return fmt.Sprintf("the remote error keeps %d bytes", len(err.Error()))
			}
			break
		}
		if reads > sent+1 {
			return fmt.Sprintf("%d reads and no end", reads)
		}
	}
	resetStreams(conn, s.errS, s.data)
	<-c.errDone
	return ""
}

// fakeSPDYServer reads the client's frames from conn; it sends afterErr
// once the client opened its first stream and afterData once it opened the
// second, or after spdyQuiet without one; then it hangs up. It returns
// when the client has closed its end.
func fakeSPDYServer(conn net.Conn, afterErr, afterData []byte) {
	syns := make(chan struct{}, 16)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		fr, err := spdy.NewFramer(io.Discard, conn)
		if err != nil {
			return
		}
		for {
			frame, err := fr.ReadFrame()
			if err != nil {
				_, _ = io.Copy(io.Discard, conn) // until the client closes
				return
			}
			if _, ok := frame.(*spdy.SynStreamFrame); ok {
				select {
				case syns <- struct{}{}:
				default:
				}
			}
		}
	}()
	for _, b := range [][]byte{afterErr, afterData} {
		select {
		case <-syns:
		case <-time.After(spdyQuiet):
		case <-readDone:
		}
		if _, err := conn.Write(b); err != nil {
			break
		}
	}
	_ = conn.Close()
	<-readDone
}

// spdySeeds are well-formed exchanges (replies, the kubelet's error
// message, data, FIN and RST on the two streams, a ping, a GOAWAY) and a
// few hostile ones (a 16 MiB data frame declared and not sent, replies for
// streams never opened, a header block of many fields).
func spdySeeds(f *testing.F) [][2][]byte {
	var frames bytes.Buffer
	fr, err := spdy.NewFramer(&frames, &bytes.Buffer{})
	if err != nil {
		f.Fatal(err)
	}
	// The header blocks share one zlib stream, so the frames of a seed are
	// written in the order they are sent, and split after.
	write := func(fs ...spdy.Frame) []byte {
		frames.Reset()
		for _, x := range fs {
			if err := fr.WriteFrame(x); err != nil {
				f.Fatal(err)
			}
		}
		return append([]byte(nil), frames.Bytes()...)
	}
	h := http.Header{"Streamtype": {"error"}}
	reply1 := write(&spdy.SynReplyFrame{StreamId: 1, Headers: h})
	reply3 := write(&spdy.SynReplyFrame{StreamId: 3, Headers: h})
	refused := []byte("error forwarding port 2379 to pod 0f1e: connection refused")
	data := []byte("\x00\x00\x00\x12\x04\x00\x00\x00\x00\x00") // an HTTP/2 SETTINGS frame, as etcd's gRPC would send
	seeds := [][2][]byte{
		{reply1, append(reply3, write(&spdy.DataFrame{StreamId: 3, Data: data}, &spdy.DataFrame{StreamId: 3, Flags: spdy.DataFlagFin})...)},
		{reply1, append(reply3, write(&spdy.DataFrame{StreamId: 1, Data: refused, Flags: spdy.DataFlagFin},
			&spdy.RstStreamFrame{StreamId: 3, Status: spdy.Cancel})...)},
		{append(reply1, write(&spdy.PingFrame{Id: 2})...), append(reply3, write(&spdy.GoAwayFrame{Status: spdy.GoAwayOK})...)},
		{reply1, append(reply3, 0, 0, 0, 3, 0, 0xff, 0xff, 0xff, 'x')}, // 16 MiB declared, one byte sent
		{write(&spdy.SynReplyFrame{StreamId: 7, Headers: h}, &spdy.RstStreamFrame{StreamId: 1, Status: spdy.RefusedStream}), nil},
		{reply1, append(reply3, write(&spdy.DataFrame{StreamId: 1, Data: bytes.Repeat([]byte("e"), 3*maxErrorMessage), Flags: spdy.DataFlagFin})...)},
		{[]byte("HTTP/1.1 500 Internal Server Error\r\n\r\n"), nil},
	}
	many := http.Header{}
	for i := range 200 {
		many.Set(fmt.Sprintf("X-%d", i), strings.Repeat("v", 100))
	}
	return append(seeds, [2][]byte{write(&spdy.SynReplyFrame{StreamId: 1, Headers: many}), nil})
}

// goroutines is every goroutine's stack, for a hang's report.
func goroutines() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}
