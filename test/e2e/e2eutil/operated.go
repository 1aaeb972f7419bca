package e2eutil

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/etcdfleet/etcdfleet/memberctl/operator"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
	"github.com/etcdfleet/etcdfleet/test/sandbox/kubelet"
)

// DirectCluster is the sandbox cluster name that OperatedSandbox operates
// by dialling Pod IPs; it operates every other cluster over port-forward
// through its apiserver.
const DirectCluster = "direct"

// AccessFor is how OperatedSandbox's operator reaches etcd on the sandbox
// cluster named cluster: operator.Direct for DirectCluster, else
// operator.PortForward. It needs no sandbox, so that a spec tree can be
// built from it.
func AccessFor(cluster string) operator.Access {
	if cluster == DirectCluster {
		return operator.Direct
	}
	return operator.PortForward
}

// OperatedSandbox is a sandbox whose clusters each run the single-cluster
// operator (memberctl) in the test process, the setup the memberctl e2e
// suites share: a client for each cluster, and operators that a spec may
// stop and start again (an operator restart).
type OperatedSandbox struct {
	Fleet *sandbox.Fleet
	// Clients holds a client of each cluster, by cluster name.
	Clients   map[string]client.WithWatch
	operators map[string]func()
	// credentials are what each cluster's operator runs as: the manager's
	// ServiceAccount that etcdfleetctl register installs, under its RBAC
	// and admission policies (RegisterInstall), never the sandbox admin.
	credentials map[string]*rest.Config
	// options are what every operator runs with (OperatorOptions unless
	// the suite set its own, StartOperatedSandboxWith).
	options operator.Options
}

// StartOperatedSandbox starts a sandbox of the named clusters, with the
// workload CRDs and a kubelet that restarts containers quickly (200 ms
// backoff, 1 s at most), then an administrator's client and an operator
// (AccessFor) for each cluster, the operator as the ServiceAccount that
// etcdfleetctl register installs, under its RBAC and admission policies.
// Call it from a BeforeSuite: the operators and the sandbox stop when that
// node's cleanup runs (DeferCleanup). The operators run with production's
// options (OperatorOptions) and log to GinkgoWriter (shown beside a failed
// spec, or as it runs with -ginkgo.v).
func StartOperatedSandbox(ctx context.Context, clusters ...string) *OperatedSandbox {
	GinkgoHelper()
	return StartOperatedSandboxWith(ctx, OperatorOptions(), clusters...)
}

// StartOperatedSandboxWith is StartOperatedSandbox whose operators run
// with opts: a suite shortens there, as settings, a pace that its specs
// would otherwise wait out (say which and why where it does).
func StartOperatedSandboxWith(ctx context.Context, opts operator.Options, clusters ...string) *OperatedSandbox {
	GinkgoHelper()
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	fleet, err := sandbox.Start(ctx, sandbox.Options{
		Clusters: clusters,
		CRDDirs:  []string{WorkloadCRDDir()},
		Kubelet:  kubelet.Options{RestartBackoff: 200 * time.Millisecond, MaxRestartBackoff: time.Second},
		Logf:     func(f string, a ...any) { GinkgoWriter.Printf(f+"\n", a...) },
	})
	Expect(err).NotTo(HaveOccurred())
	s := &OperatedSandbox{Fleet: fleet, Clients: map[string]client.WithWatch{}, operators: map[string]func(){},
		credentials: map[string]*rest.Config{}, options: opts}
	DeferCleanup(func() {
		for _, stop := range s.operators {
			stop()
		}
		Expect(fleet.Stop()).To(Succeed())
	})
	for _, name := range clusters {
		c, err := client.NewWithWatch(fleet.Cluster(name).Config, client.Options{Scheme: Scheme()})
		Expect(err).NotTo(HaveOccurred())
		s.Clients[name] = c
		s.credentials[name] = registeredConfig(ctx, fleet.Cluster(name))
		s.StartOperator(name)
	}
	return s
}

// StartOperator starts the operator of cluster name (after StopOperator).
func (s *OperatedSandbox) StartOperator(name string) {
	GinkgoHelper()
	s.operators[name] = StartOperator(context.Background(), s.credentials[name], AccessFor(name), s.options)
}

// registeredConfig installs on c what etcdfleetctl register installs and
// returns the rest.Config of the ServiceAccount token it mints, with the
// sandbox client's rate limits (a kubeconfig carries none, and client-go's
// default 5 QPS would pace the operator, not the code under test).
func registeredConfig(ctx context.Context, c *sandbox.Cluster) *rest.Config {
	GinkgoHelper()
	kc, err := RegisterInstall(ctx, c)
	Expect(err).NotTo(HaveOccurred())
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	Expect(err).NotTo(HaveOccurred())
	cfg.QPS, cfg.Burst = c.Config.QPS, c.Config.Burst
	return cfg
}

// StopOperator stops the operator of cluster name and waits for it to
// exit; it does nothing if that operator is stopped already.
func (s *OperatedSandbox) StopOperator(name string) {
	if stop := s.operators[name]; stop != nil {
		stop()
		delete(s.operators, name)
	}
}

// OperatorRunning reports whether the operator of cluster name runs.
func (s *OperatedSandbox) OperatorRunning(name string) bool {
	return s.operators[name] != nil
}

// Namespace creates namespace ns in cluster, unless it exists.
func (s *OperatedSandbox) Namespace(ctx context.Context, cluster, ns string) {
	GinkgoHelper()
	_, err := s.Fleet.Cluster(cluster).Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
}
