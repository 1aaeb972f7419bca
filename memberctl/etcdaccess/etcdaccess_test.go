package etcdaccess

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"runtime"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
)

const (
	clusterKey = testNS + "/" + subdomain
	podKey     = testNS + "/" + testPod
)

var _ = Describe("ParsePodAddress", func() {
	DescribeTable("accepts in-cluster Pod DNS names",
		func(addr, ns, pod string, port int) {
			gotNS, gotPod, gotPort, err := ParsePodAddress(addr)
			Expect(err).NotTo(HaveOccurred())
			Expect([]any{gotNS, gotPod, gotPort}).To(Equal([]any{ns, pod, port}))
		},
		Entry("svc", "etcd-0.c1.ns1.svc:2379", "ns1", "etcd-0", 2379),
		Entry("cluster domain, trailing dot, upper case", "ETCD-0.c1.ns1.svc.cluster.local.:2380", "ns1", "etcd-0", 2380),
	)
	DescribeTable("rejects anything else",
		func(addr string) {
			_, _, _, err := ParsePodAddress(addr)
			Expect(err).To(HaveOccurred())
		},
		Entry("an IP", "10.0.0.1:2379"),
		Entry("a Service name", "etcd.ns1.svc:2379"),
		Entry("not svc", "etcd-0.c1.ns1.pod:2379"),
		Entry("no port", "etcd-0.c1.ns1.svc"),
		Entry("port 0", "etcd-0.c1.ns1.svc:0"),
		Entry("an empty label", "etcd-0..ns1.svc:2379"),
	)
})

var _ = Describe("PortForwardDialer and ClientPool", func() {
	var (
		d    *PortForwardDialer
		pool *ClientPool
	)
	BeforeEach(func() {
		var err error
		d, err = NewPortForwardDialer(restCfg, PortForwardOptions{})
		Expect(err).NotTo(HaveOccurred())
		pool = NewClientPool(d, zap.NewNop())
		DeferCleanup(func() {
			Expect(pool.Close()).To(Succeed())
			Expect(d.Close()).To(Succeed())
		})
	})

	It("serves Put and Get through the apiserver on one shared connection", func(ctx SpecContext) {
		cli, err := pool.Get(ctx, clusterKey, []string{endpoint}, etcdTLS)
		Expect(err).NotTo(HaveOccurred())
		putGet(ctx, cli, "/pf/a", "1")
		conn := sharedConn(d, podKey)
		Expect(conn).NotTo(BeNil())
		// Status dials a second gRPC connection: a second stream pair, not a second upgrade.
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		st, err := cli.Status(sctx, endpoint)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Version).NotTo(BeEmpty())
		Expect(sharedConn(d, podKey)).To(BeIdenticalTo(conn))
	})

	It("reuses a client for the same endpoint set and TLS, and replaces it when TLS changes", func(ctx SpecContext) {
		other := "https://etcd-1." + subdomain + "." + testNS + ".svc:2379"
		c1, err := pool.Get(ctx, clusterKey, []string{endpoint, other}, etcdTLS)
		Expect(err).NotTo(HaveOccurred())
		c2, err := pool.Get(ctx, clusterKey, []string{other, endpoint, endpoint}, newTLS(etcdCA))
		Expect(err).NotTo(HaveOccurred())
		Expect(c2).To(BeIdenticalTo(c1), "same set, equal TLS rebuilt: same client")
		c3, err := pool.Get(ctx, clusterKey, []string{endpoint}, newTLS(etcdCA))
		Expect(err).NotTo(HaveOccurred())
		Expect(c3).To(BeIdenticalTo(c1), "a changed set is applied in place")
		Expect(c3.Endpoints()).To(Equal([]string{endpoint}))
		putGet(ctx, c3, "/pf/reuse", "1")

		c4, err := pool.Get(ctx, clusterKey, []string{endpoint}, &tls.Config{InsecureSkipVerify: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(c4).NotTo(BeIdenticalTo(c1))
		Expect(c1.Ctx().Err()).To(HaveOccurred(), "the replaced client is closed")
		pool.Forget(clusterKey)
		Expect(c4.Ctx().Err()).To(HaveOccurred(), "Forget closes the client")
	})

	It("recovers from a member restart on the same shared connection", func(ctx SpecContext) {
		DeferCleanup(func(ctx SpecContext) {
			if etcdCmd == nil { // the spec failed with the member down
				startEtcd(ctx, assetsDir)
			}
		})
		cli, err := pool.Get(ctx, clusterKey, []string{endpoint}, etcdTLS)
		Expect(err).NotTo(HaveOccurred())
		putGet(ctx, cli, "/pf/restart", "before")
		conn := sharedConn(d, podKey)

		stopEtcd()
		// Each stream opened while the member is down gets the kubelet's
		// dial error; client-go's PortForwarder would drop the session here.
		Expect(forwardErr(ctx, d, 2379)).To(MatchError(ContainSubstring("connection refused")))
		gctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err = cli.Get(gctx, "/pf/restart")
		cancel()
		Expect(err).To(HaveOccurred())

		startEtcd(ctx, assetsDir)
		Eventually(func(g Gomega) {
			gctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			resp, err := cli.Get(gctx, "/pf/restart")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(resp.Kvs).To(HaveLen(1))
			g.Expect(string(resp.Kvs[0].Value)).To(Equal("before"))
		}).WithContext(ctx).WithTimeout(45 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		Expect(sharedConn(d, podKey)).To(BeIdenticalTo(conn))
		Expect(isClosed(conn)).To(BeFalse())
	}, SpecTimeout(3*time.Minute))

	It("reports a port nothing listens on with the kubelet's reason, and keeps the connection", func(ctx SpecContext) {
		healthy, err := d.DialPod(ctx, testNS, testPod, 2379)
		Expect(err).NotTo(HaveOccurred())
		defer healthy.Close()
		conn := sharedConn(d, podKey)
		err = forwardErr(ctx, d, 9999)
		Expect(err).To(MatchError(And(ContainSubstring("forwarding port 9999"), ContainSubstring("connection refused"))))
		Expect(errors.Is(err, io.EOF)).To(BeFalse())

		cli, err := pool.Get(ctx, clusterKey, []string{endpoint}, etcdTLS)
		Expect(err).NotTo(HaveOccurred())
		putGet(ctx, cli, "/pf/after-error", "1")
		Expect(sharedConn(d, podKey)).To(BeIdenticalTo(conn))
	})

	It("fails an unknown Pod at the upgrade with the apiserver's reason", func(ctx SpecContext) {
		_, err := d.DialPod(ctx, testNS, "nope", 2379)
		Expect(err).To(MatchError(ContainSubstring(`pods "nope" not found`)))
	})

	It("closes a Pod connection that carries no stream for IdleTimeout", func(ctx SpecContext) {
		short, err := NewPortForwardDialer(restCfg, PortForwardOptions{IdleTimeout: 300 * time.Millisecond})
		Expect(err).NotTo(HaveOccurred())
		defer short.Close()
		c, err := short.DialPod(ctx, testNS, testPod, 2379)
		Expect(err).NotTo(HaveOccurred())
		conn := sharedConn(short, podKey)
		Consistently(func() httpstream.Connection { return sharedConn(short, podKey) }).
			WithTimeout(time.Second).Should(BeIdenticalTo(conn), "an open stream keeps it")
		Expect(c.Close()).To(Succeed())
		Eventually(func() httpstream.Connection { return sharedConn(short, podKey) }).Should(BeNil())
		Eventually(func() bool { return isClosed(conn) }).Should(BeTrue())
	})

	It("leaves no goroutines behind after Close", func(ctx SpecContext) {
		base := runtime.NumGoroutine()
		d2, err := NewPortForwardDialer(restCfg, PortForwardOptions{})
		Expect(err).NotTo(HaveOccurred())
		pool2 := NewClientPool(d2, zap.NewNop())
		cli, err := pool2.Get(ctx, clusterKey, []string{endpoint}, etcdTLS)
		Expect(err).NotTo(HaveOccurred())
		wctx, wcancel := context.WithCancel(ctx)
		events := cli.Watch(wctx, "/pf/leak")
		putGet(ctx, cli, "/pf/leak", "1")
		Eventually(events).WithTimeout(10 * time.Second).Should(Receive())
		Expect(forwardErr(ctx, d2, 9999)).To(HaveOccurred())
		open, err := d2.DialPod(ctx, testNS, testPod, 2379) // left open: Close must end it
		Expect(err).NotTo(HaveOccurred())
		Expect(runtime.NumGoroutine()).To(BeNumerically(">", base+10), "the test must measure something")

		wcancel()
		Expect(pool2.Close()).To(Succeed())
		Expect(d2.Close()).To(Succeed())
		_, err = open.Read(make([]byte, 1))
		Expect(err).To(HaveOccurred(), "Close resets streams still open")
		// 60 s: under CI's load (two e2e packages beside this one) the
		// SPDY connection's shutdown, which waits for every reset stream to
		// leave its map, once took longer than 15 s; a leak never ends.
		Eventually(runtime.NumGoroutine).WithTimeout(60*time.Second).WithPolling(100*time.Millisecond).
			Should(BeNumerically("<=", base+2), goroutineDump)
	})
})

var _ = Describe("DirectDialer", func() {
	It("serves Put and Get on the Pod IP from the Pod's status", func(ctx SpecContext) {
		d := NewDirectDialer(func(ctx context.Context, ns, name string) (string, error) {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return "", err
			}
			return p.Status.PodIP, nil
		})
		pool := NewClientPool(d, zap.NewNop())
		defer pool.Close()
		cli, err := pool.Get(ctx, clusterKey, []string{endpoint}, etcdTLS)
		Expect(err).NotTo(HaveOccurred())
		putGet(ctx, cli, "/direct/a", "2")
	})
})

func putGet(ctx context.Context, cli *clientv3.Client, key, val string) {
	GinkgoHelper()
	c, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_, err := cli.Put(c, key, val)
	Expect(err).NotTo(HaveOccurred())
	resp, err := cli.Get(c, key)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.Kvs).To(HaveLen(1))
	Expect(string(resp.Kvs[0].Value)).To(Equal(val))
}

// forwardErr dials port and reads once. The kubelet's reason for failing
// the forward comes back from DialPod when it wins the race with the
// stream's reply, and from the first Read otherwise.
func forwardErr(ctx context.Context, d PodDialer, port int) error {
	c, err := d.DialPod(ctx, testNS, testPod, port)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Read(make([]byte, 1))
	return err
}

// sharedConn is the Pod's current SPDY connection, nil if there is none.
func sharedConn(d *PortForwardDialer, key string) httpstream.Connection {
	d.mu.Lock()
	defer d.mu.Unlock()
	pc := d.pods[key]
	if pc == nil || !isReady(pc) {
		return nil
	}
	return pc.conn
}

func goroutineDump() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}
