package etcdaccess

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	sandboxpf "github.com/etcdfleet/etcdfleet/test/sandbox/portforward"
)

// The suite runs a real kube-apiserver (envtest), the sandbox kubelet that
// serves its port-forward, and one real etcd member on a loopback IP of its
// own, served with a certificate for its in-cluster DNS name.
const (
	testNS    = "etcdaccess"
	testPod   = "etcd-0"
	subdomain = "c1"
	nodeName  = "node-1"
)

var (
	testEnv   *envtest.Environment
	assetsDir string
	restCfg   *rest.Config
	cs        kubernetes.Interface
	kubelet   *sandboxpf.Server
	etcdIP    string
	tmpDir    string
	etcdCmd   *exec.Cmd
	etcdCA    *x509.Certificate
	etcdTLS   *tls.Config // client side: trusts etcdCA
	// forwards counts the connections the kubelet forwarded to a Pod,
	// as the kubelet saw them.
	forwards atomic.Int64
	endpoint = fmt.Sprintf("https://%s.%s.%s.svc:2379", testPod, subdomain, testNS)
)

func TestEtcdAccess(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "memberctl/etcdaccess (envtest + real etcd)")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		Fail("KUBEBUILDER_ASSETS is unset: run with KUBEBUILDER_ASSETS=$(test/tools/assets.sh) " +
			"KUBEBUILDER_CONTROLPLANE_START_TIMEOUT=90s (see the Makefile's TEST_ENV)")
	}
	assetsDir = assets
	var err error
	tmpDir, err = os.MkdirTemp("", "etcdaccess-")
	Expect(err).NotTo(HaveOccurred())
	etcdIP = loopbackIP()
	etcdCA = writeEtcdCerts(tmpDir, etcdIP)
	etcdTLS = newTLS(etcdCA)
	startEtcd(ctx, assets)

	kubelet, err = sandboxpf.NewServer(func(ns, pod string, port int32) (string, error) {
		if ns != testNS || pod != testPod {
			return "", fmt.Errorf("no target for pod %s/%s", ns, pod)
		}
		forwards.Add(1)
		return net.JoinHostPort(etcdIP, strconv.Itoa(int(port))), nil
	})
	Expect(err).NotTo(HaveOccurred())

	testEnv = &envtest.Environment{}
	restCfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	cs = kubernetes.NewForConfigOrDie(restCfg)
	createNodeAndPod(ctx)
}, NodeTimeout(12*time.Minute))

var _ = AfterSuite(func() {
	if kubelet != nil {
		Expect(kubelet.Close()).To(Succeed())
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
	stopEtcd()
	if tmpDir != "" {
		_ = os.RemoveAll(tmpDir)
	}
})

// loopbackIP picks 127.77.x.y from the PID so that test packages running
// in parallel do not share etcd's fixed ports.
func loopbackIP() string {
	pid := os.Getpid()
	return fmt.Sprintf("127.77.%d.%d", 1+(pid/250)%250, 1+pid%250)
}

func startEtcd(ctx context.Context, assets string) {
	client, peer := "https://"+etcdIP+":2379", "http://"+etcdIP+":2380"
	etcdCmd = exec.Command(filepath.Join(assets, "etcd"),
		"--name", testPod, "--data-dir", filepath.Join(tmpDir, "data"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", testPod+"="+peer, "--initial-cluster-state", "new",
		"--cert-file", filepath.Join(tmpDir, "server.crt"),
		"--key-file", filepath.Join(tmpDir, "server.key"),
		"--log-level", "warn")
	etcdCmd.Stdout, etcdCmd.Stderr = GinkgoWriter, GinkgoWriter
	Expect(etcdCmd.Start()).To(Succeed())
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: etcdTLS, DisableKeepAlives: true}}
	Eventually(func() error {
		resp, err := hc.Get(client + "/health")
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("health: %s", resp.Status)
		}
		return nil
	}).WithContext(ctx).WithTimeout(60 * time.Second).Should(Succeed())
}

func stopEtcd() {
	if etcdCmd == nil || etcdCmd.Process == nil {
		return
	}
	_ = etcdCmd.Process.Kill()
	_ = etcdCmd.Wait()
	etcdCmd = nil
}

// createNodeAndPod points the apiserver at the sandbox kubelet: the Node's
// address and kubelet port are all it reads for port-forward.
func createNodeAndPod(ctx context.Context) {
	node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = kubelet.Port()
	_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())

	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	pod, err := cs.CoreV1().Pods(testNS).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: testPod},
		Spec: corev1.PodSpec{
			NodeName: nodeName, Hostname: testPod, Subdomain: subdomain,
			Containers: []corev1.Container{{Name: "etcd", Image: "etcd"}},
		},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	pod.Status.Phase = corev1.PodRunning
	pod.Status.PodIP = etcdIP
	pod.Status.PodIPs = []corev1.PodIP{{IP: etcdIP}}
	_, err = cs.CoreV1().Pods(testNS).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// writeEtcdCerts writes a CA and a serving certificate for the member's DNS
// names (the wildcard an operator would issue) and returns the CA.
func writeEtcdCerts(dir, ip string) *x509.Certificate {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "etcdaccess-test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	Expect(err).NotTo(HaveOccurred())
	caCert, err := x509.ParseCertificate(caDER)
	Expect(err).NotTo(HaveOccurred())

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	srv := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: testPod},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"*." + subdomain + "." + testNS + ".svc", "*." + subdomain + "." + testNS + ".svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP(ip)},
	}
	der, err := x509.CreateCertificate(rand.Reader, srv, caCert, &key.PublicKey, caKey)
	Expect(err).NotTo(HaveOccurred())
	keyDER, err := x509.MarshalECPrivateKey(key)
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(filepath.Join(dir, "server.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)).To(Succeed())
	Expect(os.WriteFile(filepath.Join(dir, "server.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)).To(Succeed())
	return caCert
}

// newTLS builds a fresh config each call, as a reconciler would.
func newTLS(ca *x509.Certificate) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}
