package etcdaccess

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	spdyconn "k8s.io/apimachinery/pkg/util/httpstream/spdy"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
)

// TestDialPodUpgradesAgainAfterAnUnansweredStream plays a kubelet whose
// first SPDY connection stops answering new streams, as one with a blocked
// frame worker does (test/sandbox/portforward explains how one gets
// blocked): the dial that gets no reply fails after StreamTimeout, and the
// next one upgrades a new connection instead of waiting on the old one.
func TestDialPodUpgradesAgainAfterAnUnansweredStream(t *testing.T) {
	var upgrades atomic.Int32
	stuck := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := httpstream.Handshake(r, w, []string{portforward.PortForwardProtocolV1Name}); err != nil {
			return
		}
		first := upgrades.Add(1) == 1
		conn := spdyconn.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, _ <-chan struct{}) error {
			if first && s.Headers().Get(corev1.PortForwardRequestIDHeader) != "1" {
				<-stuck // no reply, and this frame worker is blocked
			}
			if s.Headers().Get(corev1.StreamType) == corev1.StreamTypeData {
				go func() { _, _ = io.Copy(s, s) }()
			}
			return nil
		})
		if conn != nil {
			<-conn.CloseChan()
		}
	}))
	defer srv.Close()
	defer close(stuck)

	// StreamTimeout is what the unanswered dial waits; the answered ones
	// must fit it at the load of make test (300 ms did not, in CI-Q).
	d, err := NewPortForwardDialer(&rest.Config{Host: srv.URL}, PortForwardOptions{StreamTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	echo := func(what string) {
		t.Helper()
		c, err := d.DialPod(ctx, "ns", "etcd-0", 2379)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		defer c.Close()
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatalf("%s: write: %v", what, err)
		}
		buf := make([]byte, 4)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
			t.Fatalf("%s: read %q, %v", what, buf, err)
		}
	}

	echo("the first dial")
	if _, err := d.DialPod(ctx, "ns", "etcd-0", 2379); !errors.Is(err, errNoStreamReply) {
		t.Fatalf("the unanswered dial: got %v, want %v", err, errNoStreamReply)
	}
	echo("the dial after it")
	if n := upgrades.Load(); n != 2 {
		t.Fatalf("%d upgrades, want 2: the unanswering connection is not dialled on again", n)
	}
}
