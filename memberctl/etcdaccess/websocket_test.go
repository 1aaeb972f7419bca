package etcdaccess

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/zap"
)

var _ = Describe("WebSocketDialer and ClientPool", func() {
	var (
		d    *WebSocketDialer
		pool *ClientPool
	)
	BeforeEach(func() {
		var err error
		d, err = NewWebSocketDialer(restCfg, WebSocketOptions{})
		Expect(err).NotTo(HaveOccurred())
		pool = NewClientPool(d, zap.NewNop())
		DeferCleanup(func() {
			Expect(pool.Close()).To(Succeed())
			Expect(d.Close()).To(Succeed())
		})
	})

	It("serves Put, Get and a watch through the apiserver", func(ctx SpecContext) {
		cli, err := pool.Get(ctx, clusterKey, []string{endpoint}, etcdTLS)
		Expect(err).NotTo(HaveOccurred())
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		events := cli.Watch(wctx, "/ws/a")
		putGet(ctx, cli, "/ws/a", "1")
		Eventually(events).WithTimeout(10 * time.Second).Should(Receive())
		Expect(openConns(d)).To(BeNumerically(">=", 1))
	})

	It("carries a write larger than one WebSocket frame intact, in order", func(ctx SpecContext) {
		port := startEcho(etcdIP)
		c, err := d.DialPod(ctx, testNS, testPod, port)
		Expect(err).NotTo(HaveOccurred())
		defer c.Close()
		// One Write of 5 frames' worth: the kubelet reads each frame as a
		// whole message, so a fragmented message would be corrupted.
		sent := make([]byte, 5*wsWriteBuffer+123)
		for i := range sent {
			sent[i] = byte(i * 7)
		}
		Expect(c.SetDeadline(time.Now().Add(20 * time.Second))).To(Succeed())
		go func() { _, _ = c.Write(sent) }()
		got := make([]byte, len(sent))
		_, err = io.ReadFull(c, got)
		Expect(err).NotTo(HaveOccurred())
		Expect(bytes.Equal(got, sent)).To(BeTrue(), "the echo differs from what was written")
	})

	It("recovers from a member restart", func(ctx SpecContext) {
		DeferCleanup(func(ctx SpecContext) {
			if etcdCmd == nil { // the spec failed with the member down
				startEtcd(ctx, assetsDir)
			}
		})
		cli, err := pool.Get(ctx, clusterKey, []string{endpoint}, etcdTLS)
		Expect(err).NotTo(HaveOccurred())
		putGet(ctx, cli, "/ws/restart", "before")

		stopEtcd()
		Expect(forwardErr(ctx, d, 2379)).To(MatchError(ContainSubstring("connection refused")))
		startEtcd(ctx, assetsDir)
		Eventually(func(g Gomega) {
			gctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			resp, err := cli.Get(gctx, "/ws/restart")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(resp.Kvs).To(HaveLen(1))
			g.Expect(string(resp.Kvs[0].Value)).To(Equal("before"))
		}).WithContext(ctx).WithTimeout(45 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	}, SpecTimeout(3*time.Minute))

	It("answers the first call after an outage longer than gRPC's connect backoff", func(ctx SpecContext) {
		DeferCleanup(func(ctx SpecContext) {
			if etcdCmd == nil { // the spec failed with the member down
				startEtcd(ctx, assetsDir)
			}
		})
		dials := &countingDialer{PodDialer: d}
		counted := NewClientPool(dials, zap.NewNop())
		DeferCleanup(counted.Close)
		cli, err := counted.Get(ctx, clusterKey, []string{endpoint}, etcdTLS)
		Expect(err).NotTo(HaveOccurred())
		putGet(ctx, cli, "/ws/outage", "before")

		stopEtcd()
		// gRPC tries again at once, then 1 s, 2.6 s, 5.2 s, 9.4 s and 16 s
		// later (±20 %), and waits about 10 s after that sixth failure: the
		// member is back, and the call below ends, well inside that wait.
		before := dials.n.Load()
		Eventually(func() int64 { return dials.n.Load() - before }).WithContext(ctx).
			WithTimeout(40 * time.Second).Should(BeNumerically(">=", 6))
		startEtcd(ctx, assetsDir)

		cli, err = counted.Get(ctx, clusterKey, []string{endpoint}, etcdTLS)
		Expect(err).NotTo(HaveOccurred())
		gctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		resp, err := cli.Get(gctx, "/ws/outage")
		Expect(err).NotTo(HaveOccurred(), "the pooled channel waited out gRPC's backoff")
		Expect(resp.Kvs).To(HaveLen(1))
	}, SpecTimeout(3*time.Minute))

	It("reports a port nothing listens on with the kubelet's reason", func(ctx SpecContext) {
		err := forwardErr(ctx, d, 9999)
		Expect(err).To(MatchError(And(ContainSubstring("forwarding port 9999"), ContainSubstring("connection refused"))))
		Expect(errors.Is(err, io.EOF)).To(BeFalse())
	})

	It("fails an unknown Pod at the handshake with the apiserver's reason", func(ctx SpecContext) {
		_, err := d.DialPod(ctx, testNS, "nope", 2379)
		Expect(err).To(MatchError(ContainSubstring(`pods "nope" not found`)))
	})

	It("closes what it handed out on Close, refuses later dials and leaves no goroutines", func(ctx SpecContext) {
		base := runtime.NumGoroutine()
		d2, err := NewWebSocketDialer(restCfg, WebSocketOptions{})
		Expect(err).NotTo(HaveOccurred())
		pool2 := NewClientPool(d2, zap.NewNop())
		cli, err := pool2.Get(ctx, clusterKey, []string{endpoint}, etcdTLS)
		Expect(err).NotTo(HaveOccurred())
		putGet(ctx, cli, "/ws/leak", "1")
		open, err := d2.DialPod(ctx, testNS, testPod, 2379) // left open: Close must end it
		Expect(err).NotTo(HaveOccurred())
		Expect(runtime.NumGoroutine()).To(BeNumerically(">", base+5), "the test must measure something")

		Expect(pool2.Close()).To(Succeed())
		Expect(d2.Close()).To(Succeed())
		_, err = open.Read(make([]byte, 1))
		Expect(err).To(HaveOccurred(), "Close ends connections still open")
		_, err = d2.DialPod(ctx, testNS, testPod, 2379)
		Expect(err).To(MatchError(ErrDialerClosed))
		Eventually(runtime.NumGoroutine).WithTimeout(15*time.Second).WithPolling(100*time.Millisecond).
			Should(BeNumerically("<=", base+2), goroutineDump)
	})
})

// startEcho serves a TCP echo on ip at a free port until the spec ends.
func startEcho(ip string) int {
	GinkgoHelper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(ln.Close)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// countingDialer counts DialPod calls: each is one connect attempt of gRPC.
type countingDialer struct {
	PodDialer
	n atomic.Int64
}

func (c *countingDialer) DialPod(ctx context.Context, namespace, pod string, port int) (net.Conn, error) {
	c.n.Add(1)
	return c.PodDialer.DialPod(ctx, namespace, pod, port)
}

func openConns(d *WebSocketDialer) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.conns)
}
