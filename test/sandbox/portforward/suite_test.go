package portforward_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/etcdfleet/etcdfleet/test/sandbox/portforward"
)

// The suite runs a real kube-apiserver (envtest) that verifies the sandbox
// kubelets' certificates, two sandbox kubelets (one for the Close spec), and
// a TCP echo server as the Pods' target.
const (
	testNS   = "pfsandbox"
	echoPort = 7
)

var (
	testEnv *envtest.Environment
	restCfg *rest.Config
	cs      kubernetes.Interface
	kubelet *portforward.Server
	spare   *portforward.Server // on node-2; the Close spec stops it
	echo    *echoServer
	tmpDir  string
)

func TestPortForward(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "test/sandbox/portforward (envtest)")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		Fail("KUBEBUILDER_ASSETS is unset: run with KUBEBUILDER_ASSETS=$(test/tools/assets.sh) " +
			"KUBEBUILDER_CONTROLPLANE_START_TIMEOUT=90s (see the Makefile's TEST_ENV)")
	}
	echo = startEcho()
	lookup := func(ns, pod string, port int32) (string, error) {
		if ns == testNS && (pod == "echo" || pod == "echo-spare") && port == echoPort {
			return echo.ln.Addr().String(), nil
		}
		return "", fmt.Errorf("no target for pod %s/%s port %d", ns, pod, port)
	}
	var err error
	kubelet, err = portforward.NewServer(lookup)
	Expect(err).NotTo(HaveOccurred())
	spare, err = portforward.NewServer(lookup)
	Expect(err).NotTo(HaveOccurred())

	// Make the apiserver verify both kubelets: this proves CAPEM and the SAN.
	tmpDir, err = os.MkdirTemp("", "pfsandbox-")
	Expect(err).NotTo(HaveOccurred())
	caFile := filepath.Join(tmpDir, "kubelet-ca.pem")
	Expect(os.WriteFile(caFile, append(kubelet.CAPEM(), spare.CAPEM()...), 0o600)).To(Succeed())
	testEnv = &envtest.Environment{}
	testEnv.ControlPlane.GetAPIServer().Configure().Set("kubelet-certificate-authority", caFile)
	restCfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	cs = kubernetes.NewForConfigOrDie(restCfg)

	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	createNode(ctx, "node-1", kubelet.Port())
	createNode(ctx, "node-2", spare.Port())
	createPod(ctx, "echo", "node-1")
	createPod(ctx, "ghost", "node-1") // the kubelet has no target for it
	createPod(ctx, "echo-spare", "node-2")
}, NodeTimeout(12*time.Minute))

var _ = AfterSuite(func() {
	// A Close that hangs must not keep the apiserver and etcd running.
	var closeErrs []error
	for _, s := range []*portforward.Server{kubelet, spare} {
		if s != nil {
			closeErrs = append(closeErrs, closeWithin(s, 30*time.Second))
		}
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
	if echo != nil {
		echo.close()
	}
	if tmpDir != "" {
		_ = os.RemoveAll(tmpDir)
	}
	Expect(errors.Join(closeErrs...)).To(Succeed())
})

func closeWithin(s *portforward.Server, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		return fmt.Errorf("Server.Close did not return within %s", d)
	}
}

// createNode points the apiserver at a kubelet: it reads only the address
// and the kubelet port, which must be set through the status subresource.
func createNode(ctx context.Context, name string, port int32) {
	node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = port
	_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

func createPod(ctx context.Context, name, node string) {
	_, err := cs.CoreV1().Pods(testNS).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "echo", Image: "echo"}},
		},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// echoServer echoes every connection and reports each one it accepts and
// each one that ends, so specs can see what happens to the target socket.
type echoServer struct {
	ln       net.Listener
	accepted chan net.Conn
	ended    chan net.Conn
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
}

func startEcho() *echoServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	e := &echoServer{ln: ln, accepted: make(chan net.Conn, 256), ended: make(chan net.Conn, 256),
		conns: map[net.Conn]struct{}{}}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.mu.Lock()
			e.conns[c] = struct{}{}
			e.mu.Unlock()
			e.accepted <- c
			e.wg.Add(1)
			go func() {
				defer e.wg.Done()
				_, _ = io.Copy(c, c)
				_ = c.Close()
				e.mu.Lock()
				delete(e.conns, c)
				e.mu.Unlock()
				select {
				case e.ended <- c:
				default: // nobody is watching
				}
			}()
		}
	}()
	return e
}

func (e *echoServer) close() {
	_ = e.ln.Close()
	e.mu.Lock()
	for c := range e.conns {
		_ = c.Close()
	}
	e.mu.Unlock()
	e.wg.Wait()
}

// drain forgets connections of earlier specs.
func (e *echoServer) drain() {
	for {
		select {
		case <-e.accepted:
		case <-e.ended:
		default:
			return
		}
	}
}

// openPair creates the error and data streams of one forwarded connection,
// as client-go's PortForwarder does.
func openPair(conn httpstream.Connection, port, id int) (errS, data httpstream.Stream) {
	GinkgoHelper()
	errS, data, err := createPair(conn, port, id)
	Expect(err).NotTo(HaveOccurred())
	return errS, data
}

// forwardError returns the kubelet's message for a forward it fails. The
// kubelet may reset the data stream before replying to it, so creating the
// data stream may fail; the message is on the error stream either way.
func forwardError(conn httpstream.Connection, port, id int) string {
	GinkgoHelper()
	errS, _, _ := createPair(conn, port, id)
	return readErr(errS)
}

func createPair(conn httpstream.Connection, port, id int) (errS, data httpstream.Stream, err error) {
	GinkgoHelper()
	h := http.Header{}
	h.Set(corev1.StreamType, corev1.StreamTypeError)
	h.Set(corev1.PortHeader, fmt.Sprint(port))
	h.Set(corev1.PortForwardRequestIDHeader, fmt.Sprint(id))
	errS, err = conn.CreateStream(h)
	Expect(err).NotTo(HaveOccurred())
	Expect(errS.Close()).To(Succeed())
	h.Set(corev1.StreamType, corev1.StreamTypeData)
	data, err = conn.CreateStream(h)
	return errS, data, err
}

// readErr returns what the kubelet wrote on an error stream, once it closes.
func readErr(errS httpstream.Stream) string {
	GinkgoHelper()
	ch := make(chan string, 1)
	go func() { b, _ := io.ReadAll(errS); ch <- string(b) }()
	var s string
	Eventually(ch).WithTimeout(10 * time.Second).Should(Receive(&s))
	return s
}
