package kubeconfigsecret_test

import (
	"context"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/operator"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

// One sandbox: "mgmt" runs the manager and doubles as a healthy workload
// cluster (its admin kubeconfig can be registered under any name); "w1" is
// the workload cluster that faults are injected into. Every spec uses its
// own Secret names and namespaces and removes its Secrets.
const secretNS = "fleet-kubeconfigs"

// The provider is generic: the registration label, key and paused
// annotation are the caller's; the label and annotation here differ from
// etcdfleet's own to show it.
const (
	testLabel  = "test.example/workload-kubeconfig"
	testKey    = "kubeconfig"
	testPaused = "test.example/paused"
	testNSList = "test.example/namespaces"
)

var (
	fleet    *sandbox.Fleet
	mgmt, w1 *sandbox.Cluster
	mgmtC    client.Client // test client on mgmt
	provider *kubeconfigsecret.Provider
	mgr      mcmanager.Manager
	rec      = &recorder{seen: map[string]map[types.NamespacedName]bool{}}
	hist     = &history{reasons: map[string][]string{}}
)

// Short timings, so that faults show within seconds. PreflightTimeout is
// longer than the few seconds in which a healthy cluster must engage, so a
// hung cluster is visibly stuck in pre-flight meanwhile.
var testOptions = kubeconfigsecret.Options{
	Namespace:            secretNS,
	Label:                testLabel,
	Key:                  testKey,
	PausedAnnotation:     testPaused,
	NamespacesAnnotation: testNSList,
	Scheme:               operator.Scheme(),
	WatchedKinds:         operator.WatchedKinds(),
	AccessChecks:         accessChecks(operator.PortForward),
	PreflightTimeout:     6 * time.Second,
	SyncTimeout:          15 * time.Second,
	ProbeInterval:        250 * time.Millisecond,
	ProbeTimeout:         time.Second,
	FailureThreshold:     3,
	Backoff:              wait.Backoff{Duration: 250 * time.Millisecond, Factor: 2, Cap: 2 * time.Second},
	ClusterOptions:       []cluster.Option{func(o *cluster.Options) { o.Cache.ByObject = operator.CacheByObject() }},
	OnChange:             hist.record,
	Unwatched:            workload.UnwatchedNamespaces,
}

// accessChecks are memberctl's permissions in the provider's type, as the
// fleet wiring passes them.
func accessChecks(a operator.Access) []kubeconfigsecret.AccessCheck {
	var out []kubeconfigsecret.AccessCheck
	for _, c := range operator.AccessChecks(a) {
		out = append(out, kubeconfigsecret.AccessCheck{Group: c.Group, Resource: c.Resource, Subresource: c.Subresource, Verbs: c.Verbs})
	}
	return out
}

func TestKubeconfigSecret(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "kubeconfigsecret Suite")
}

// Why each failed spec failed, at the end of the output where CI shows it.
var _ = ReportAfterSuite("failures, last", e2eutil.PrintFailures)

func crdDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "config", "crd", "workload")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	start := time.Now()
	var err error
	fleet, err = sandbox.Start(ctx, sandbox.Options{
		Clusters: []string{"mgmt", "w1"}, Nodes: 1, CRDDirs: []string{crdDir()}, Audit: true,
		Logf: func(f string, a ...any) { GinkgoWriter.Printf(f+"\n", a...) },
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(fleet.Stop()).To(Succeed()) })
	AddReportEntry("sandbox start", time.Since(start).Round(time.Millisecond).String())
	mgmt, w1 = fleet.Cluster("mgmt"), fleet.Cluster("w1")
	mgmtC, err = client.New(mgmt.Config, client.Options{Scheme: operator.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	namespace(ctx, mgmt, secretNS)

	provider, err = kubeconfigsecret.New(testOptions)
	Expect(err).NotTo(HaveOccurred())
	mgr, err = mcmanager.New(mgmt.Config, provider, manager.Options{
		Scheme:                 operator.Scheme(),
		Cache:                  cache.Options{ByObject: testOptions.CacheByObject()},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(provider.SetupWithManager(ctx, mgr)).To(Succeed())
	Expect(mcbuilder.ControllerManagedBy(mgr).Named("kubeconfigsecret-test-recorder").
		For(&v1alpha1.EtcdCluster{}).
		Complete(mcreconcile.Func(func(ctx context.Context, req mcreconcile.Request) (reconcile.Result, error) {
			// A reconciler finds its cluster through the manager, as the
			// real ones do; a disengaged cluster's requests are dropped.
			if _, err := mgr.GetCluster(ctx, req.ClusterName); err != nil {
				return reconcile.Result{}, err
			}
			rec.add(string(req.ClusterName), req.NamespacedName)
			return reconcile.Result{}, nil
		}))).To(Succeed())

	startManager(mgr)
}, NodeTimeout(4*time.Minute))

// startProvider runs a provider of its own with opts (a Label and a
// ControllerName other than the suite's) in a manager of its own, until
// the current node's cleanup.
func startProvider(ctx context.Context, opts kubeconfigsecret.Options) *kubeconfigsecret.Provider {
	GinkgoHelper()
	p, err := kubeconfigsecret.New(opts)
	Expect(err).NotTo(HaveOccurred())
	m, err := mcmanager.New(mgmt.Config, p, manager.Options{
		Cache:   cache.Options{ByObject: opts.CacheByObject()},
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(p.SetupWithManager(ctx, m)).To(Succeed())
	startManager(m)
	return p
}

// startManager runs m until the current node's cleanup.
func startManager(m mcmanager.Manager) {
	mctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(m.Start(mctx)).To(Succeed())
	}()
	DeferCleanup(func() {
		cancel()
		Eventually(done).WithTimeout(30 * time.Second).Should(BeClosed())
	})
}

// recorder remembers which objects the test controller reconciled, by
// cluster.
type recorder struct {
	mu   sync.Mutex
	seen map[string]map[types.NamespacedName]bool
}

func (r *recorder) add(cluster string, nn types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[cluster] == nil {
		r.seen[cluster] = map[types.NamespacedName]bool{}
	}
	r.seen[cluster][nn] = true
}

func (r *recorder) saw(cluster, ns, name string) func() bool {
	return func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.seen[cluster][types.NamespacedName{Namespace: ns, Name: name}]
	}
}

// history records, through Options.OnChange, the reasons each cluster went
// through (transient ones such as Disconnected included).
type history struct {
	mu      sync.Mutex
	reasons map[string][]string
}

func (h *history) record(name string) {
	st, ok := provider.State(name)
	if !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.reasons[name]; len(r) == 0 || r[len(r)-1] != st.Reason {
		h.reasons[name] = append(r, st.Reason)
	}
}

func (h *history) of(name string) func() []string {
	return func() []string {
		h.mu.Lock()
		defer h.mu.Unlock()
		return append([]string(nil), h.reasons[name]...)
	}
}

func namespace(ctx context.Context, c *sandbox.Cluster, ns string) {
	_, err := c.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
}
