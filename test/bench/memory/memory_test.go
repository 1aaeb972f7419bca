package memory

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/app"
	"github.com/etcdfleet/etcdfleet/fleet/settings"
	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/bench"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
)

const (
	etcdNS, etcdName = "bench", "main"
	unrelatedNS      = "unrelated"
	// nowhere is a Node no kubelet serves: Pods bound to it are stored and
	// watched like any other, but nothing runs them (and no pod GC runs in
	// the sandbox to remove them).
	nowhere = "bench-nowhere"
	mib     = 1 << 20
	// goalMiB is the product's per-cluster budget.
	goalMiB = 2.0
	// flatMiB is how much a cluster's figure may grow with the unrelated
	// Pods and still count as flat: 0.5 MiB over 2,000 Pods is 262 B a Pod,
	// an order of magnitude below what caching them would cost (a decoded
	// Pod takes kilobytes), and above the measure's noise.
	flatMiB = 0.5
)

// cluster is one workload cluster as the benchmark sees it.
type cluster struct {
	name string
	kc   []byte
	cs   kubernetes.Interface
	c    client.Client
}

// BenchmarkManagerMemory measures the fleet manager's memory per engaged
// workload cluster: with the manager running and engaged to no cluster,
// then to the first cluster, then to all BENCH_MEMORY_CLUSTERS clusters
// (default 5) each with one 3-member EtcdCluster, then again after
// BENCH_MEMORY_PODS unrelated Pods (default 2,000; no etcdfleet labels,
// bound to a Node nobody runs) were created in each cluster and a dashboard
// resync passed.
//
// The measure per cluster is the marginal cost, (all − first)/(k − 1): the
// first engaged cluster also pays the process's one-off costs (encoding/json
// and protobuf type caches, codecs, the shared Scheme and RESTMapper, the
// first event and gRPC machinery), which a fleet of tens to hundreds of
// clusters pays once. The average including them, (all − baseline)/k, is
// printed beside it. With the Pods, the growth per cluster is added to the
// marginal cost.
//
// The measure is the heap of this process (runtime.MemStats.HeapInuse after
// a forced GC, the least of the readings over one probe interval; see
// measure): the manager is built with
// app.New and runs here, so its caches, clients, controllers and
// dashboard are exactly this heap, and the difference from the baseline
// divided by the cluster count is its cost per engaged cluster. The
// sandbox is kept out of it: kube-apiserver, etcd and the
// controller-manager are separate processes anyway, and the simulated
// kubelet, which is Go code caching every Pod of its cluster, runs with
// them in a child process. What remains besides the manager is this
// benchmark's few clients, created before the baseline. RSS and goroutine
// stacks are printed beside it for information.
func BenchmarkManagerMemory(b *testing.B) {
	k := bench.EnvInt(b, "BENCH_MEMORY_CLUSTERS", 5)
	pods := bench.EnvInt(b, "BENCH_MEMORY_PODS", 2000)
	bench.QuietLogs()
	ctx := b.Context()
	names := []string{"mgmt"}
	for i := 1; i <= k; i++ {
		names = append(names, fmt.Sprintf("m%02d", i))
	}
	kcs := startSandboxProcess(b, names...)
	cfg := settings.Default()
	cfg.LeaderElection, cfg.MetricsBindAddress, cfg.HealthProbeBindAddress = false, "0", "0"
	// The bench registers the sandbox's admin, whom no admission policy
	// constrains: the manager would refuse it (Unconstrained). The checks
	// still run, so their cost is measured.
	cfg.AllowUnconstrained = true
	mgmtCS, mgmt := clients(b, kcs["mgmt"])
	if _, err := mgmtCS.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cfg.Namespace}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	var cls []*cluster
	for _, n := range names[1:] {
		cs, c := clients(b, kcs[n])
		cl := &cluster{name: n, kc: kcs[n], cs: cs, c: c}
		for _, ns := range []string{etcdNS, unrelatedNS} {
			if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		if err := c.Create(ctx, e2eutil.NewEtcdCluster(etcdNS, etcdName, 3, false)); err != nil {
			b.Fatal(err)
		}
		cls = append(cls, cl)
	}
	restCfg, err := clientcmd.RESTConfigFromKubeConfig(kcs["mgmt"])
	if err != nil {
		b.Fatal(err)
	}
	startManager(b, restCfg, cfg)
	resync := cfg.Dashboard.Resync + cfg.Dashboard.MinInterval
	window := cfg.Clusters.ProbeInterval

	// Baseline: the manager up, its dashboard writing, no cluster engaged.
	// This benchmark's clients make every kind of call they will make later
	// once now, so that their lazily filled REST mappings are in the
	// baseline too.
	isHealthy := healthy(mgmt, cls, cfg.Namespace)
	_, _, _ = isHealthy(ctx)
	if err := bench.Poll(ctx, 250*time.Millisecond, time.Minute, func(ctx context.Context) (bool, string, error) {
		err := mgmt.Get(ctx, types.NamespacedName{Name: fleetv1.FleetName}, &fleetv1.Fleet{})
		return err == nil, "the dashboard has not created the Fleet yet", client.IgnoreNotFound(err)
	}); err != nil {
		b.Fatal(err)
	}
	bench.Settle(ctx, resync)
	base := measure(b, "baseline", window)
	bench.Logf(b, "baseline (manager engaged to 0 clusters): heap %.1f MiB", base.heap/mib)

	register(b, ctx, mgmtCS, cfg.Namespace, cls[:1])
	if err := bench.Poll(ctx, 500*time.Millisecond, 5*time.Minute, healthy(mgmt, cls[:1], cfg.Namespace)); err != nil {
		b.Fatalf("engage the first cluster: %v", err)
	}
	bench.Settle(ctx, resync)
	first := measure(b, "first", window)
	bench.Logf(b, "engaged to the first cluster: heap %.1f MiB", first.heap/mib)

	register(b, ctx, mgmtCS, cfg.Namespace, cls[1:])
	if err := bench.Poll(ctx, 500*time.Millisecond, 5*time.Minute, isHealthy); err != nil {
		b.Fatalf("engage: %v", err)
	}
	bench.Settle(ctx, resync)
	engaged := measure(b, "engaged", window)
	bench.Logf(b, "engaged to %d clusters: heap %.1f MiB", k, engaged.heap/mib)

	start := time.Now()
	createUnrelatedPods(b, ctx, cls, pods)
	bench.Logf(b, "created %d unrelated Pods in each of %d clusters in %s", pods, k, time.Since(start).Round(100*time.Millisecond))
	if err := bench.Poll(ctx, 500*time.Millisecond, 2*time.Minute, isHealthy); err != nil {
		b.Fatalf("after the Pods: %v", err)
	}
	bench.Settle(ctx, resync)
	withPods := measure(b, "with-pods", window)
	// This benchmark's clients are in the baseline: keep them alive to the
	// last reading, or the GC frees them (their last use is above) and the
	// later readings come out short by their size.
	runtime.KeepAlive(mgmtCS)
	runtime.KeepAlive(mgmt)
	runtime.KeepAlive(cls)

	report(b, k, pods, base, first, engaged, withPods)
}

// register creates the registration Secrets of cls.
func register(b *testing.B, ctx context.Context, mgmt kubernetes.Interface, ns string, cls []*cluster) {
	for _, cl := range cls {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: cl.name, Namespace: ns, Labels: map[string]string{fleetv1.RegistrationLabel: "true"}},
			Data:       map[string][]byte{fleetv1.KubeconfigKey: cl.kc},
		}
		if _, err := mgmt.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func report(b *testing.B, k, pods int, base, first, engaged, withPods usage) {
	if k < 2 {
		b.Fatalf("BENCH_MEMORY_CLUSTERS=%d: the marginal cost needs at least 2 clusters", k)
	}
	// per is the marginal cost of a cluster; with the Pods, the growth
	// they caused, averaged over all k clusters, is added to it.
	per := func(u usage, f func(usage) float64) float64 {
		marginal := (f(engaged) - f(first)) / float64(k-1)
		return (marginal + (f(u)-f(engaged))/float64(k)) / mib
	}
	avg := func(f func(usage) float64) float64 { return (f(engaged) - f(base)) / float64(k) / mib }
	heap := func(u usage) float64 { return u.heap }
	alloc := func(u usage) float64 { return u.alloc }
	stack := func(u usage) float64 { return u.stack }
	rss := func(u usage) float64 { return u.rss }
	per0, perP := per(engaged, heap), per(withPods, heap)
	growth := perP - per0
	perPod := (withPods.heap - engaged.heap) / float64(k*pods)
	flat := growth <= flatMiB
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(per0, "heap-MiB/cluster")
	b.ReportMetric(perP, "heap-MiB/cluster-with-pods")
	b.ReportMetric(perPod, "heap-B/unrelated-pod")
	b.ReportMetric(per(engaged, rss), "rss-MiB/cluster")
	bench.Logf(b, `fleet manager memory per engaged cluster (%d clusters, 1 EtcdCluster × 3 members each; manager in this process, sandbox in another):
  heap (HeapInuse after GC) per additional cluster, 0 unrelated Pods: %.2f MiB   (goal ≤ %.0f MiB: %s)
  heap per additional cluster, %d unrelated Pods per cluster:      %.2f MiB   (goal ≤ %.0f MiB: %s)
  growth from the unrelated Pods: %+.2f MiB per cluster, %+.0f B per Pod   (flat = ≤ %.2f MiB: %s)
  for information, per cluster without / with the Pods: live objects (HeapAlloc) %.2f / %.2f MiB,
    goroutine stacks %.2f / %.2f MiB, RSS %.2f / %.2f MiB
  average per cluster including the process's one-off costs (paid by the first): heap %.2f MiB, RSS %.2f MiB
  absolute heap: baseline %.1f MiB, first cluster %.1f MiB, engaged %.1f MiB, with Pods %.1f MiB; host at the end: %s`,
		k, per0, goalMiB, bench.Verdict(per0 <= goalMiB), pods, perP, goalMiB, bench.Verdict(perP <= goalMiB),
		growth, perPod, flatMiB, bench.Verdict(flat),
		per(engaged, alloc), per(withPods, alloc), per(engaged, stack), per(withPods, stack), per(engaged, rss), per(withPods, rss),
		avg(heap), avg(rss), base.heap/mib, first.heap/mib, engaged.heap/mib, withPods.heap/mib, bench.HostLoad())
}

// clients builds a clientset and a controller-runtime client from kc.
func clients(b *testing.B, kc []byte) (kubernetes.Interface, client.Client) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		b.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	return cs, c
}

// startManager runs the fleet manager in this process until the benchmark
// ends; it stops before the sandbox process does.
func startManager(b *testing.B, mgmt *rest.Config, cfg settings.Config) {
	fm, err := app.New(mgmt, cfg)
	if err != nil {
		b.Fatalf("fleet manager: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fm.Start(ctx) }()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("fleet manager: %v", err)
		}
	})
}

// healthy is true when every EtcdCluster is Available and every
// FleetCluster says Ready with all members ready: the manager engaged the
// cluster, reconciled it, and its dashboard caught up.
func healthy(mgmt client.Client, cls []*cluster, regNS string) func(context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		var waiting []string
		for _, cl := range cls {
			ec := &etcdv1.EtcdCluster{}
			if err := cl.c.Get(ctx, types.NamespacedName{Namespace: etcdNS, Name: etcdName}, ec); err != nil {
				return false, "", err
			}
			fc := &fleetv1.FleetCluster{}
			if err := mgmt.Get(ctx, types.NamespacedName{Namespace: regNS, Name: cl.name}, fc); client.IgnoreNotFound(err) != nil {
				return false, "", err
			}
			if !e2eutil.Available(ec) || !meta.IsStatusConditionTrue(fc.Status.Conditions, fleetv1.ConditionReady) || fc.Status.MembersReady != 3 {
				waiting = append(waiting, fmt.Sprintf("%s: EtcdCluster ready %d, FleetCluster %q", cl.name, ec.Status.ReadyMembers, fc.Status.MembersSummary))
			}
		}
		return len(waiting) == 0, strings.Join(waiting, "; "), nil
	}
}

// createUnrelatedPods creates n Pods without etcdfleet labels in every
// cluster, bound to a Node that does not exist.
func createUnrelatedPods(b *testing.B, ctx context.Context, cls []*cluster, n int) {
	// Per cluster: etcd commits concurrent writes together, so more
	// workers than cores still pays.
	const workers = 16
	var wg sync.WaitGroup
	errs := make(chan error, len(cls)*workers)
	for _, cl := range cls {
		// The service account admission needs the namespace's default
		// ServiceAccount, which the controller-manager creates.
		if err := bench.Poll(ctx, 200*time.Millisecond, time.Minute, func(ctx context.Context) (bool, string, error) {
			_, err := cl.cs.CoreV1().ServiceAccounts(unrelatedNS).Get(ctx, "default", metav1.GetOptions{})
			return err == nil, "no default ServiceAccount yet", client.IgnoreNotFound(err)
		}); err != nil {
			b.Fatal(err)
		}
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += workers {
					if _, err := cl.cs.CoreV1().Pods(unrelatedNS).Create(ctx, unrelatedPod(i), metav1.CreateOptions{}); err != nil {
						errs <- fmt.Errorf("%s: pod %d: %w", cl.name, i, err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

func unrelatedPod(i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%05d", i), Namespace: unrelatedNS,
			Labels: map[string]string{"app.kubernetes.io/name": "unrelated", "shard": strconv.Itoa(i % 16)}},
		Spec: corev1.PodSpec{NodeName: nowhere, Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
	}
}

// usage is one memory reading of this process, in bytes: HeapInuse (the
// measure), HeapAlloc (live objects only, without the fragmentation of
// partly used spans), goroutine stacks and RSS.
type usage struct{ heap, alloc, stack, rss float64 }

// measure reads this process's memory once a second for window, each time
// after a forced GC that also returns freed memory to the OS (so RSS means
// something), and keeps the least of each figure. The window spans one
// cluster probe interval: probes and resyncs hold short-lived clients,
// discovery and RESTMappers (about 0.5 MiB per cluster in flight), and a
// single reading lands on them or not by chance; the floor is what the
// manager keeps. With BENCH_MEMORY_PROFILE=dir it also writes
// dir/<label>.pprof, a heap profile to compare with go tool pprof -base,
// and dir/<label>.goroutines.pprof.
func measure(b *testing.B, label string, window time.Duration) usage {
	u := usage{heap: math.Inf(1), alloc: math.Inf(1), stack: math.Inf(1), rss: math.Inf(1)}
	for start := time.Now(); ; {
		debug.FreeOSMemory()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		u.heap, u.alloc = min(u.heap, float64(m.HeapInuse)), min(u.alloc, float64(m.HeapAlloc))
		u.stack, u.rss = min(u.stack, float64(m.StackInuse)), min(u.rss, bench.RSS(0))
		if time.Since(start) >= window {
			break
		}
		time.Sleep(time.Second)
	}
	if dir := os.Getenv(envProfileDir); dir != "" {
		for file, profile := range map[string]string{label + ".pprof": "heap", label + ".goroutines.pprof": "goroutine"} {
			writeProfile(b, filepath.Join(dir, file), profile)
		}
	}
	return u
}

func writeProfile(b *testing.B, path, profile string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup(profile).WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}
