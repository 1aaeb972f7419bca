package etcdaccess

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"
)

// FuzzStreamConnErrors gives a SPDY port-forward connection an error stream
// and a data stream with what a workload apiserver chooses to send on them,
// in chunks of any size (SPDY data frames), and checks that:
//   - readErrors and readWithin read at most maxErrorMessage bytes of the
//     error stream, keep that prefix exactly, and allocate within
//     readAllocBudget however long the stream is (the rest stays unread);
//   - a non-empty message becomes the connection's error, resets the data
//     stream (so a blocked Read wakes) and replaces the data stream's own
//     error in Read and Write; an empty one changes nothing;
//   - Read never returns more than asked, nor (0, nil), and delivers the
//     data stream's bytes unchanged.
func FuzzStreamConnErrors(f *testing.F) {
	refused := []byte("error forwarding port 2379 to pod 0f1e, uid : exit status 1: 2024/01/01 dial tcp4 127.0.0.1:2379: connect: connection refused")
	f.Add([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), []byte(nil), uint16(0), uint8(255))
	f.Add([]byte(nil), refused, uint16(0), uint8(0))
	f.Add([]byte("some data first"), refused, uint16(3), uint8(7))
	f.Add([]byte("x"), []byte(nil), uint16(1), uint8(0))       // only filler: 64 bytes of error
	f.Add([]byte(nil), []byte("e"), uint16(65535), uint8(255)) // a 4 MiB error stream
	f.Add(bytes.Repeat([]byte("d"), 70000), []byte(nil), uint16(0), uint8(31))
	f.Fuzz(func(t *testing.T, data, errMsg []byte, fill uint16, chunk uint8) {
		errLen := len(errMsg) + int(fill)*64
		want := errorStreamBytes(errMsg, min(errLen, maxErrorMessage))

		errS := &fakeStream{prefix: errMsg, size: errLen, chunk: int(chunk) + 1}
		if got := readWithin(errS, 10*time.Second); got != string(want) {
			t.Fatalf("readWithin kept %d bytes %.100q, want the first %d", len(got), got, len(want))
		}
		if errS.consumed() > maxErrorMessage {
			t.Fatalf("readWithin read %d bytes of the error stream, more than %d", errS.consumed(), maxErrorMessage)
		}

		errS = &fakeStream{prefix: errMsg, size: errLen, chunk: int(chunk) + 1}
		dataS := &fakeStream{prefix: data, size: len(data), chunk: int(chunk)*3 + 1}
		c := &streamConn{errS: errS, data: dataS, desc: fuzzDesc, remote: podAddr("ns/p:2379"), errDone: make(chan struct{})}
		before := allocated()
		c.readErrors()
		if got := allocated() - before; got > readAllocBudget {
			t.Fatalf("reading a %d-byte error stream allocated %d bytes, budget %d", errLen, got, readAllocBudget)
		}
		if errS.consumed() > maxErrorMessage {
			t.Fatalf("read %d bytes of the error stream, more than %d", errS.consumed(), maxErrorMessage)
		}
		var wantErr error = io.EOF
		if len(want) > 0 {
			wantErr = errors.New(fuzzDesc + ": " + string(want))
		}
		if (c.remoteErr == nil) != (len(want) == 0) || (c.remoteErr != nil && c.remoteErr.Error() != wantErr.Error()) {
			t.Fatalf("remote error %.200v, want one for the %d-byte message %.100q", c.remoteErr, len(want), want)
		}
		if dataS.wasReset() != (len(want) > 0) {
			t.Fatalf("data stream reset: %v, with a %d-byte error message", dataS.wasReset(), len(want))
		}

		buf := make([]byte, int(chunk)%7+1)
		var got []byte
		var err error
		for reads := 0; err == nil; reads++ {
			if reads > len(data)+1 {
				t.Fatalf("%d reads and no end", reads)
			}
			var n int
			n, err = c.Read(buf)
			if n < 0 || n > len(buf) || (n == 0 && err == nil) {
				t.Fatalf("Read(%d bytes) = %d, %v", len(buf), n, err)
			}
			got = append(got, buf[:n]...)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("read %d bytes %.100q, want %d bytes %.100q", len(got), got, len(data), data)
		}
		if err.Error() != wantErr.Error() {
			t.Fatalf("Read ended in %.200v, want %.200v", err, wantErr)
		}
		if _, err := c.Write([]byte("x")); len(want) > 0 && (err == nil || err.Error() != wantErr.Error()) {
			t.Fatalf("Write after the kubelet's error = %v, want %.200v", err, wantErr)
		}
	})
}

// errorStreamBytes is the first n bytes a fakeStream with prefix carries:
// the prefix, then 'e'.
func errorStreamBytes(prefix []byte, n int) []byte {
	b := append([]byte(nil), prefix[:min(n, len(prefix))]...)
	return append(b, bytes.Repeat([]byte{'e'}, n-len(b))...)
}

// errFakeReset is what a fakeStream returns once reset and drained.
var errFakeReset = errors.New("stream reset")

// fakeStream is an httpstream.Stream that carries prefix then 'e' bytes up
// to size, at most chunk bytes per Read, made as read so that a long
// stream costs the test nothing. Writes fail once it is reset. It is used
// from one goroutine at a time (readWithin's hands over through a channel).
type fakeStream struct {
	prefix []byte
	size   int
	chunk  int
	off    int
	reset  bool
}

func (s *fakeStream) Read(p []byte) (int, error) {
	if s.off >= s.size {
		if s.reset {
			return 0, errFakeReset
		}
		return 0, io.EOF
	}
	n := min(len(p), s.chunk, s.size-s.off)
	for i := range n {
		if s.off+i < len(s.prefix) {
			p[i] = s.prefix[s.off+i]
		} else {
			p[i] = 'e'
		}
	}
	s.off += n
	return n, nil
}

func (s *fakeStream) Write(p []byte) (int, error) {
	if s.reset {
		return 0, errFakeReset
	}
	return len(p), nil
}

func (s *fakeStream) Close() error         { return nil }
func (s *fakeStream) Reset() error         { s.reset = true; return nil }
func (s *fakeStream) Headers() http.Header { return http.Header{} }
func (s *fakeStream) Identifier() uint32   { return 1 }
func (s *fakeStream) consumed() int        { return s.off }
func (s *fakeStream) wasReset() bool       { return s.reset }
