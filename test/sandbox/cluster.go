package sandbox

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/etcdfleet/etcdfleet/test/sandbox/kubelet"
	"github.com/etcdfleet/etcdfleet/test/sandbox/portforward"
	"github.com/etcdfleet/etcdfleet/test/sandbox/proc"
	"github.com/etcdfleet/etcdfleet/test/sandbox/sandboxdns"
)

// Cluster is one sandbox cluster: kube-apiserver and etcd (envtest),
// kube-controller-manager (garbage collection, namespaces, service accounts,
// PVC protection) and a simulated kubelet with its Nodes.
type Cluster struct {
	Name string
	// Config is an admin (system:masters) config reaching the apiserver
	// through the cluster's fault-injecting front door; hand it (or
	// Kubeconfig) to the code under test.
	Config *rest.Config
	// Kubeconfig is Config as kubeconfig bytes.
	Kubeconfig []byte
	// Clientset reaches the apiserver directly, unaffected by Hang and
	// Partition; for test assertions.
	Clientset kubernetes.Interface
	Kubelet   *kubelet.Kubelet
	// Dir holds the cluster's logs, volumes and hosts file.
	Dir string

	env   *envtest.Environment
	proxy *apiProxy
	kcm   *proc.Process
	pf    *portforward.Server
	hosts *sandboxdns.Hosts
}

func startCluster(ctx context.Context, name string, opts Options, ips *kubelet.IPAllocator) (_ *Cluster, err error) {
	c := &Cluster{Name: name, Dir: filepath.Join(opts.Dir, name)}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.stop()
		}
	}()
	c.env = &envtest.Environment{
		BinaryAssetsDirectory: opts.AssetsDir, CRDDirectoryPaths: opts.CRDDirs, ErrorIfCRDPathMissing: true,
		ControlPlaneStartTimeout: opts.StartTimeout, ControlPlaneStopTimeout: 30 * time.Second,
		CRDInstallOptions: envtest.CRDInstallOptions{MaxTime: CRDInstallWait},
	}
	if opts.Audit {
		policy, err := writeAuditPolicy(c.Dir)
		if err != nil {
			return nil, err
		}
		c.env.ControlPlane.GetAPIServer().Configure().Set("audit-policy-file", policy).
			Set("audit-log-path", AuditLog(c.Dir, name)).Set("audit-log-format", "json")
	}
	cfg, err := c.env.Start()
	if err != nil {
		return nil, fmt.Errorf("start apiserver: %w", err)
	}
	admin, err := c.env.AddUser(envtest.User{Name: "sandbox-admin", Groups: []string{"system:masters"}}, cfg)
	if err != nil {
		return nil, err
	}
	direct := admin.Config()
	// The kubelet and the tests write many statuses at once.
	direct.QPS, direct.Burst = 500, 1000
	if c.Clientset, err = kubernetes.NewForConfig(direct); err != nil {
		return nil, err
	}
	// CRDs are installed by env.Start, before the GC starts: otherwise it
	// only learns of custom owners at its 30 s discovery resync.
	if c.kcm, err = startControllerManager(opts.AssetsDir, c.Dir, direct, c.env.ControlPlane.APIServer.CertDir); err != nil {
		return nil, err
	}
	u, err := url.Parse(direct.Host)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("apiserver address %q: %v", direct.Host, err)
	}
	if c.proxy, err = newAPIProxy(u.Host); err != nil {
		return nil, err
	}
	c.Config = rest.CopyConfig(direct)
	c.Config.Host = "https://" + c.proxy.addr
	c.Config.QPS, c.Config.Burst = 0, 0 // let the code under test choose
	if c.Kubeconfig, err = kubeconfigFor(c.Config, name, "sandbox-admin"); err != nil {
		return nil, err
	}
	if c.hosts, err = sandboxdns.NewHosts(filepath.Join(c.Dir, "hosts")); err != nil {
		return nil, err
	}
	// The lookup closes over c.Kubelet, which is set before any Pod runs.
	if c.pf, err = portforward.NewServer(func(ns, pod string, port int32) (string, error) {
		return c.Kubelet.PodAddress(ns, pod, port)
	}); err != nil {
		return nil, err
	}
	kopts := opts.Kubelet
	kopts.Cluster, kopts.Client, kopts.Nodes = name, c.Clientset, opts.Nodes
	kopts.EtcdBinary = filepath.Join(opts.AssetsDir, "etcd")
	kopts.EtcdBinaries = etcdBinaries(opts.AssetsDir)
	kopts.Dir, kopts.Hosts, kopts.IPs, kopts.DaemonPort = filepath.Join(c.Dir, "kubelet"), c.hosts, ips, c.pf.Port()
	if kopts.Logf == nil {
		kopts.Logf = opts.Logf
	}
	c.Kubelet = kubelet.New(kopts)
	if err := c.Kubelet.Start(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// stop tears the cluster down; safe on a partly started cluster.
func (c *Cluster) stop() error {
	if c.Kubelet != nil {
		c.Kubelet.Stop()
	}
	if c.pf != nil {
		c.pf.Close()
	}
	if c.proxy != nil {
		c.proxy.close()
	}
	if c.kcm != nil {
		c.kcm.Stop(5 * time.Second)
	}
	if c.env != nil && c.env.ControlPlane.APIServer != nil {
		return c.env.Stop()
	}
	return nil
}

// Hang makes the apiserver accept connections and never answer, for
// clients using Config/Kubeconfig. Heal undoes it.
func (c *Cluster) Hang() error { return c.proxy.setMode(proxyHung) }

// Partition makes connections to the apiserver be refused. Heal undoes it.
func (c *Cluster) Partition() error { return c.proxy.setMode(proxyRefused) }

// Heal ends Hang or Partition.
func (c *Cluster) Heal() error { return c.proxy.setMode(proxyNormal) }

// Reboot reboots every Node of the cluster at once.
func (c *Cluster) Reboot(ctx context.Context, opts kubelet.RebootOptions) error {
	return c.Kubelet.RebootAll(ctx, opts)
}

// PowerLoss cuts the power of every Node of the cluster at once; they
// boot after outage. See kubelet.Kubelet.PowerLoss.
func (c *Cluster) PowerLoss(ctx context.Context, outage time.Duration) error {
	return c.Kubelet.PowerLossAll(ctx, outage)
}

// ServiceAccountKubeconfig mints a token for namespace/sa with the
// TokenRequest API and returns a kubeconfig using it, reaching the
// apiserver through the same front door as Config.
func (c *Cluster) ServiceAccountKubeconfig(ctx context.Context, namespace, sa string, ttl time.Duration) ([]byte, error) {
	secs := int64(ttl.Seconds())
	tr, err := c.Clientset.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for %s/%s: %w", namespace, sa, err)
	}
	cfg := &rest.Config{Host: c.Config.Host, BearerToken: tr.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.Config.CAData}}
	return kubeconfigFor(cfg, c.Name, namespace+"-"+sa)
}

// BoundServiceAccountKubeconfig is ServiceAccountKubeconfig with a token
// bound to the Secret namespace/boundTo (created if need be): deleting
// that Secret revokes this token alone, while the ServiceAccount's other
// tokens keep working. Suites rotate a registration this way without a
// second identity, which the admission policies would not constrain.
func (c *Cluster) BoundServiceAccountKubeconfig(ctx context.Context, namespace, sa, boundTo string, ttl time.Duration) ([]byte, error) {
	sec, err := c.Clientset.CoreV1().Secrets(namespace).Create(ctx,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: boundTo}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		sec, err = c.Clientset.CoreV1().Secrets(namespace).Get(ctx, boundTo, metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("token binding Secret %s/%s: %w", namespace, boundTo, err)
	}
	secs := int64(ttl.Seconds())
	tr, err := c.Clientset.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs, BoundObjectRef: &authenticationv1.BoundObjectReference{
			Kind: "Secret", APIVersion: "v1", Name: sec.Name, UID: sec.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for %s/%s bound to Secret %s: %w", namespace, sa, boundTo, err)
	}
	cfg := &rest.Config{Host: c.Config.Host, BearerToken: tr.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.Config.CAData}}
	return kubeconfigFor(cfg, c.Name, namespace+"-"+sa)
}

// kubeconfigFor serialises cfg (CA plus client certificate or token).
func kubeconfigFor(cfg *rest.Config, cluster, user string) ([]byte, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[cluster] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken,
	}
	kc.Contexts[cluster] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: user}
	kc.CurrentContext = cluster
	return clientcmd.Write(*kc)
}

// etcdBinaries finds the per-minor etcd builds test/tools/assets.sh links
// beside the default one (etcd-3.6, etcd-3.7), keyed by minor.
func etcdBinaries(dir string) map[string]string {
	paths, _ := filepath.Glob(filepath.Join(dir, "etcd-*.*"))
	out := map[string]string{}
	for _, p := range paths {
		out[strings.TrimPrefix(filepath.Base(p), "etcd-")] = p
	}
	return out
}
