package portforward_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/httpstream"
	clientpf "k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

var _ = Describe("Server", func() {
	BeforeEach(func() { echo.drain() })

	DescribeTable("forwards bytes both ways through an apiserver that verifies its certificate",
		func(dial func(pod string) (httpstream.Connection, error)) {
			conn, err := dial("echo")
			Expect(err).NotTo(HaveOccurred())
			defer conn.Close()
			// Two TCP connections at once on one session, as a gRPC client makes.
			e1, d1 := openPair(conn, echoPort, 1)
			_, d2 := openPair(conn, echoPort, 2)
			roundTrip(d1, "hello")
			roundTrip(d2, "world")

			// The client's FIN ends the forward: the target is closed, then
			// the kubelet closes both streams without an error message.
			Expect(d1.Close()).To(Succeed())
			Expect(readErr(e1)).To(BeEmpty())
			expectEnded(d1)
			Eventually(echo.ended).WithTimeout(5 * time.Second).Should(Receive())
			roundTrip(d2, "still there")
		},
		Entry("with client-go's SPDY dialer", spdyDial),
		Entry("with client-go's SPDY-over-WebSocket dialer", wsDial),
	)

	It("reports a missing target on the error stream and keeps the session", func() {
		conn, err := spdyDial("ghost")
		Expect(err).NotTo(HaveOccurred())
		defer conn.Close()
		Expect(forwardError(conn, echoPort, 1)).To(ContainSubstring("no target for pod pfsandbox/ghost port 7"))

		conn2, err := spdyDial("echo")
		Expect(err).NotTo(HaveOccurred())
		defer conn2.Close()
		Expect(forwardError(conn2, 8, 1)).To(ContainSubstring("port 8"))
		_, d := openPair(conn2, echoPort, 2)
		roundTrip(d, "after the error")
	})

	It("ends the client's stream when the target closes", func() {
		conn, err := spdyDial("echo")
		Expect(err).NotTo(HaveOccurred())
		defer conn.Close()
		forwardToClosedTarget(conn)
	})

	// A gRPC client writes once more (a ping, a GOAWAY) before it sees
	// the end of a stream whose target went away. Each data frame is
	// handed to its stream's reader by one of five frame workers per
	// session; unread, it would block that worker and every later stream
	// whose ID falls on it (stream IDs step by 2, so the pairs below
	// cover all five).
	It("keeps serving the session after the client wrote to a forward whose target went away", func() {
		conn, err := spdyDial("echo")
		Expect(err).NotTo(HaveOccurred())
		defer conn.Close()
		d := forwardToClosedTarget(conn)
		for range 3 {
			_, _ = d.Write([]byte("late"))
		}
		for id := 2; id <= 6; id++ {
			_, d := openPair(conn, echoPort, id)
			roundTrip(d, fmt.Sprintf("forward %d", id))
			Expect(d.Reset()).To(Succeed())
		}
	})

	It("closes the target when the client resets its stream", func() {
		conn, err := spdyDial("echo")
		Expect(err).NotTo(HaveOccurred())
		defer conn.Close()
		_, d := openPair(conn, echoPort, 1)
		roundTrip(d, "ping")
		var target net.Conn
		Expect(echo.accepted).To(Receive(&target))
		Expect(d.Reset()).To(Succeed())
		Eventually(echo.ended).WithTimeout(5 * time.Second).Should(Receive(BeIdenticalTo(target)))
	})

	It("ends live forwards on Close and leaves no goroutines behind", func() {
		base := runtime.NumGoroutine()
		conn, err := spdyDial("echo-spare")
		Expect(err).NotTo(HaveOccurred())
		defer conn.Close()
		_, d := openPair(conn, echoPort, 1)
		roundTrip(d, "ping")

		closed := make(chan error, 1)
		go func() { closed <- spare.Close() }()
		Eventually(closed).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
		expectEnded(d)
		Eventually(echo.ended).WithTimeout(5 * time.Second).Should(Receive())
		Eventually(conn.CloseChan()).WithTimeout(10*time.Second).Should(BeClosed(), "the apiserver drops the session")
		_, err = spdyDial("echo-spare")
		Expect(err).To(MatchError(ContainSubstring("error dialing backend")))

		_ = conn.Close() // EOF: the session is already gone
		Eventually(runtime.NumGoroutine).WithTimeout(15*time.Second).WithPolling(100*time.Millisecond).
			Should(BeNumerically("<=", base+2), goroutineDump)
	})
})

// forwardToClosedTarget opens forward 1 on conn, closes its target at the
// echo server, and returns its data stream once the client sees it end.
func forwardToClosedTarget(conn httpstream.Connection) httpstream.Stream {
	GinkgoHelper()
	_, d := openPair(conn, echoPort, 1)
	roundTrip(d, "ping")
	var target net.Conn
	Expect(echo.accepted).To(Receive(&target))
	Expect(target.Close()).To(Succeed())
	expectEnded(d)
	return d
}

func pfURL(pod string) *url.URL {
	return cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(testNS).
		Name(pod).SubResource("portforward").URL()
}

func spdyDial(pod string) (httpstream.Connection, error) {
	rt, up, err := spdy.RoundTripperFor(restCfg)
	if err != nil {
		return nil, err
	}
	d := spdy.NewDialer(up, &http.Client{Transport: rt}, http.MethodPost, pfURL(pod))
	conn, _, err := d.Dial(clientpf.PortForwardProtocolV1Name)
	return conn, err
}

func wsDial(pod string) (httpstream.Connection, error) {
	d, err := clientpf.NewSPDYOverWebsocketDialer(pfURL(pod), restCfg)
	if err != nil {
		return nil, err
	}
	conn, _, err := d.Dial(clientpf.PortForwardProtocolV1Name)
	return conn, err
}

// roundTrip writes msg and expects the echo of it within a few seconds.
func roundTrip(s httpstream.Stream, msg string) {
	GinkgoHelper()
	_, err := s.Write([]byte(msg))
	Expect(err).NotTo(HaveOccurred())
	got := make(chan string, 1)
	go func() {
		buf := make([]byte, len(msg))
		n, _ := io.ReadFull(s, buf)
		got <- string(buf[:n])
	}()
	Eventually(got).WithTimeout(5 * time.Second).Should(Receive(Equal(msg)))
}

// expectEnded waits for the stream's read side to end.
func expectEnded(s httpstream.Stream) {
	GinkgoHelper()
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, s); close(done) }()
	Eventually(done).WithTimeout(10*time.Second).Should(BeClosed(), "the stream never ended")
}

func goroutineDump() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}
