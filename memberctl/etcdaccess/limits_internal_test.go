package etcdaccess

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
)

// A workload apiserver that answers a port-forward with an endless error
// message costs the manager at most maxErrorMessage of it: the manager is
// shared by every workload cluster.
func TestErrorChannelIsBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		// The port prefix of the error channel, then 4 MiB of message.
		msg := append([]byte{errorChannel, 0, 0}, bytes.Repeat([]byte("x"), 4<<20)...)
		_ = ws.WriteMessage(websocket.BinaryMessage, msg)
		_, _, _ = ws.ReadMessage() // until the client goes
	}))
	defer srv.Close()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := newWSConn(ws, "pod ns/p port 2379", podAddr("ns/p:2379"), nil)
	defer c.Close()
	_, err = c.Read(make([]byte, 10))
	if err == nil {
		t.Fatal("no error from the error channel")
	}
	if n := strings.Count(err.Error(), "x"); n == 0 || n > maxErrorMessage {
		t.Errorf("kept %d bytes of the error message, want 1..%d", n, maxErrorMessage)
	}
}
