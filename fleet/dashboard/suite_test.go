package dashboard

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/limiter"
	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/envtestenv"
)

// The suite runs the pure specs and the Writer specs in one binary. The
// Writer specs run against ONE real kube-apiserver and etcd (envtest) with
// the management CRDs; each starts its own manager and Writer, with a
// stubSource and stubLimiter standing in for the fleet wiring.

var (
	testEnv   *envtestenv.Env
	cfg       *rest.Config
	k8sClient client.Client // direct: every read sees the previous write
	clientset kubernetes.Interface
	scheme    *runtime.Scheme
)

func TestDashboard(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "fleet/dashboard (envtest)")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(GinkgoLogr)
	env, err := envtestenv.Start(envtestenv.ManagementCRDs, fleetv1.AddToScheme)
	Expect(err).NotTo(HaveOccurred())
	testEnv, cfg, scheme, k8sClient, clientset = env, env.Config, env.Scheme, env.Client, env.Clientset
})

// Every spec starts with no FleetCluster. A Writer collects every
// unregistered FleetCluster of the management cluster, whatever its
// namespace, so without this a spec's Writer would first delete, one by
// one, the rows all earlier specs left behind (envtest deletes no
// namespace), and at nice 10 beside the sandbox suites that queue of
// deletes held up the orphan spec's own for over 10 s.
var _ = BeforeEach(func(ctx SpecContext) {
	var left fleetv1.FleetClusterList
	Expect(k8sClient.List(ctx, &left)).To(Succeed())
	for i := range left.Items {
		Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, &left.Items[i]))).To(Succeed())
	}
})

var _ = AfterSuite(func() {
	Expect(testEnv.Stop()).To(Succeed())
})

// newSecret creates a registration Secret and returns its ClusterInfo,
// connected and probed now.
func newSecret(ns, name string) ClusterInfo {
	GinkgoHelper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{"fleet.etcdfleet.io/cluster": "true"}}}
	Expect(k8sClient.Create(context.Background(), s)).To(Succeed())
	return ClusterInfo{Name: name, Namespace: ns, SecretUID: s.UID, Connected: true,
		Reason: fleetv1.ReasonProbeSucceeded, ServerVersion: "v1.36.3", LastProbeTime: time.Now()}
}

// running is a started manager with a Writer and a counting client.
type running struct {
	w      *Writer
	writes *countingClient
}

// startWriter starts a manager running a Writer over src and lim; the
// manager stops when the spec ends.
func startWriter(src Source, lim LimiterStats, opts Options) running {
	GinkgoHelper()
	return startWriterWith(src, lim, opts, manager.Options{})
}

// startWriterWith is startWriter on a manager with mgrOpts (scheme,
// metrics, probes and name validation are set here).
func startWriterWith(src Source, lim LimiterStats, opts Options, mgrOpts manager.Options) running {
	GinkgoHelper()
	mgrOpts.Scheme = scheme
	mgrOpts.Metrics = metricsserver.Options{BindAddress: "0"}
	mgrOpts.HealthProbeBindAddress = "0"
	mgrOpts.Controller = config.Controller{SkipNameValidation: ptr.To(true)}
	mgr, err := manager.New(cfg, mgrOpts)
	Expect(err).NotTo(HaveOccurred())
	cc := &countingClient{Client: mgr.GetClient(), n: map[string]int{}, conflicts: map[string]int{}}
	w := New(cc, src, lim, opts)
	Expect(w.SetupWithManager(mgr)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	DeferCleanup(func() {
		cancel()
		Eventually(done, 30*time.Second).Should(BeClosed())
	})
	return running{w: w, writes: cc}
}

// countingClient counts the writes made through it, per object: every
// attempt, and apart from those the ones refused for a conflict (the
// Writer's cache was behind its own last write).
type countingClient struct {
	client.Client
	mu        sync.Mutex
	n         map[string]int
	conflicts map[string]int
}

// writeKey names an object whether typed or unstructured: FleetClusters
// are namespaced and the Fleet is not, so namespace/name is enough.
func writeKey(obj client.Object) string { return client.ObjectKeyFromObject(obj).String() }

// done counts a write to obj that returned err, and returns err.
func (c *countingClient) done(obj client.Object, err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[writeKey(obj)]++
	if apierrors.IsConflict(err) {
		c.conflicts[writeKey(obj)]++
	}
	return err
}

// Conflicts returns how many writes to obj were refused for a conflict.
func (c *countingClient) Conflicts(obj client.Object) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conflicts[writeKey(obj)]
}

// Writes returns how many writes were made to obj so far.
func (c *countingClient) Writes(obj client.Object) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[writeKey(obj)]
}

// total returns how many writes were made to any object so far.
func (c *countingClient) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := 0
	for _, n := range c.n {
		t += n
	}
	return t
}

func (c *countingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return c.done(obj, c.Client.Create(ctx, obj, opts...))
}

func (c *countingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.done(obj, c.Client.Update(ctx, obj, opts...))
}

func (c *countingClient) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
	return c.done(obj, c.Client.Patch(ctx, obj, p, opts...))
}

func (c *countingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return c.done(obj, c.Client.Delete(ctx, obj, opts...))
}

func (c *countingClient) Status() client.SubResourceWriter {
	return countingStatus{SubResourceWriter: c.Client.Status(), c: c}
}

type countingStatus struct {
	client.SubResourceWriter
	c *countingClient
}

func (s countingStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return s.c.done(obj, s.SubResourceWriter.Update(ctx, obj, opts...))
}

func (s countingStatus) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
	return s.c.done(obj, s.SubResourceWriter.Patch(ctx, obj, p, opts...))
}

// stubSource is the fleet wiring: registered clusters and their etcd
// objects, changed by the specs.
type stubSource struct {
	mu       sync.Mutex
	clusters []ClusterInfo
	etcd     map[string]stubEtcd
	// probeNow, when set, stamps LastProbeTime = now on every Clusters
	// and Cluster call, as a wiring probing continuously would.
	probeNow bool
	// lookups counts Cluster calls per key: one per recomputation.
	lookups map[string]int
}

type stubEtcd struct {
	clusters []etcdv1.EtcdCluster
	members  []etcdv1.EtcdMember
	err      error
}

func newStubSource() *stubSource {
	return &stubSource{etcd: map[string]stubEtcd{}, lookups: map[string]int{}}
}

func (s *stubSource) Clusters() []ClusterInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]ClusterInfo(nil), s.clusters...)
	if s.probeNow {
		for i := range out {
			out[i].LastProbeTime = time.Now()
		}
	}
	return out
}

func (s *stubSource) Cluster(key string) (ClusterInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lookups[key]++
	for _, c := range s.clusters {
		if DefaultClusterKey(c) == key {
			if s.probeNow {
				c.LastProbeTime = time.Now()
			}
			return c, true
		}
	}
	return ClusterInfo{}, false
}

// Lookups returns how many times the writer recomputed the cluster key.
func (s *stubSource) Lookups(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookups[key]
}

func (s *stubSource) EtcdObjects(_ context.Context, cluster string) ([]etcdv1.EtcdCluster, []etcdv1.EtcdMember, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.etcd[cluster]
	if !ok {
		return nil, nil, fmt.Errorf("cluster %s is not engaged", cluster)
	}
	return e.clusters, e.members, e.err
}

// set registers info (replacing one of the same Secret) with its etcd objects.
func (s *stubSource) set(info ClusterInfo, e stubEtcd) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remove(info)
	s.clusters = append(s.clusters, info)
	s.etcd[DefaultClusterKey(info)] = e
}

// update changes a registered cluster's info in place.
func (s *stubSource) update(ns, name string, f func(*ClusterInfo)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.clusters {
		if s.clusters[i].Namespace == ns && s.clusters[i].Name == name {
			f(&s.clusters[i])
		}
	}
}

func (s *stubSource) unregister(info ClusterInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remove(info)
}

func (s *stubSource) remove(info ClusterInfo) {
	out := s.clusters[:0]
	for _, c := range s.clusters {
		if c.Namespace != info.Namespace || c.Name != info.Name {
			out = append(out, c)
		}
	}
	s.clusters = out
}

// stubLimiter returns a fixed Stats.
type stubLimiter struct {
	mu sync.Mutex
	s  limiter.Stats
}

func (l *stubLimiter) Snapshot() limiter.Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s
}
