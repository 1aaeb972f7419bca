package fleet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/config/settings"
	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/app"
	"github.com/etcdfleet/etcdfleet/fleet/limiter"
	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/bench"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
	"github.com/etcdfleet/etcdfleet/test/sandbox/kubelet"
)

const (
	ns, name = "bench", "main"
	members  = 3
	// goal is the product's stated bound on heal time / limiter lower bound.
	goal = 1.2
	// outage is how long each rebooted Node stays NotReady.
	outage = time.Second
)

// workload is one workload cluster as the benchmark sees it.
type workload struct {
	name   string
	c      client.Client
	cs     kubernetes.Interface
	rec    *bench.PodRecorder
	old    map[string]types.UID
	healed time.Time
}

// BenchmarkFleetHeal starts BENCH_CLUSTERS workload clusters (default 10),
// each with one 3-member PVC EtcdCluster, registers them by Secret with
// the fleet manager running in this process with the default
// configuration (limiter 2/s, burst 10), then reboots every Node of every
// cluster at once. Heal time runs from the first member Pod seen terminal
// to every EtcdCluster Available with every member Pod replaced (new UID)
// and Ready, all seen on the apiservers.
//
// It is compared with the lower bound the limiter allows: the first burst
// replacements go at once, the other 3N − burst at rate, and the last
// replaced member still has to start, so (3N − burst)/rate + etcd start.
// The bound counts from the moment there is something to replace, so heal
// time does too: before the first Pod is terminal the simulated kubelets
// are still stopping etcd gracefully (0.5-1 s), which is the outage, not
// healing. Pods keep turning terminal for a few seconds after that, while
// the limiter already paces the first ones; the time from the reboot call
// is printed too.
// etcd start is measured in the same run: per cluster, the ADDED → Ready
// time of the replacement created last (by then the other members are up,
// so it is the plain start of one member under the fleet's load); the p50
// over clusters. Goal: heal / bound ≤ 1.2.
//
// Meanwhile a lincheck workload (clientRate ops/s) runs on every cluster
// from before the reboot until it took a write after its heal: its
// longest gap between two successful writes is the client-visible
// unavailability, reported as p50 and max over clusters.
func BenchmarkFleetHeal(b *testing.B) {
	n := bench.EnvInt(b, "BENCH_CLUSTERS", 10)
	bench.QuietLogs()
	ctx := b.Context()
	names := []string{"mgmt"}
	for i := 1; i <= n; i++ {
		names = append(names, fmt.Sprintf("w%02d", i))
	}
	f := bench.StartSandbox(b, ctx, names...)
	cfg := settings.Default()
	cfg.LeaderElection, cfg.MetricsBindAddress, cfg.HealthProbeBindAddress = false, "0", "0"
	ws := setUp(b, ctx, f, names[1:], cfg.Namespace)
	fm := startManager(b, f.Cluster("mgmt").Config, cfg)

	boot := time.Now()
	if err := bench.Poll(ctx, 250*time.Millisecond, 5*time.Minute, allAvailable(ws)); err != nil {
		b.Fatalf("bootstrap: %v", err)
	}
	bench.Logf(b, "bootstrap: %d EtcdClusters Available in %s", n, time.Since(boot).Round(100*time.Millisecond))
	// The bound assumes the bucket is full when the fleet reboots.
	if err := bench.Poll(ctx, 100*time.Millisecond, time.Minute, func(context.Context) (bool, string, error) {
		st := fm.Limiter.Snapshot()
		return st.TokensAvailable >= float64(st.Burst), fmt.Sprintf("limiter has %.1f of %d tokens", st.TokensAvailable, st.Burst), nil
	}); err != nil {
		b.Fatal(err)
	}
	before := fm.Limiter.Snapshot()
	for _, w := range ws {
		rec, err := bench.RecordPods(ctx, w.cs, ns)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(rec.Stop)
		w.rec, w.old = rec, rec.UIDs()
		if len(w.old) != members {
			b.Fatalf("%s: want %d member Pods before the reboot, have %v", w.name, members, w.old)
		}
	}

	cs := startClients(b, ctx, f, ws)
	t0 := time.Now()
	if err := f.RebootAll(ctx, kubelet.RebootOptions{Phase: kubelet.Alternate, Outage: outage}); err != nil {
		b.Fatalf("reboot: %v", err)
	}
	rebootCall := time.Since(t0)
	if err := bench.Poll(ctx, 50*time.Millisecond, 5*time.Minute, allHealed(ws)); err != nil {
		b.Fatalf("heal: %v", err)
	}
	after := fm.Limiter.Snapshot()
	gaps := cs.stop(b, ctx, ws)
	report(b, ws, t0, rebootCall, before, after)
	reportGaps(b, gaps)
}

// setUp creates the EtcdClusters and the registration Secrets.
func setUp(b *testing.B, ctx context.Context, f *sandbox.Fleet, names []string, regNS string) []*workload {
	mgmt := f.Cluster("mgmt").Clientset.CoreV1()
	if _, err := mgmt.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: regNS}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	var ws []*workload
	for _, n := range names {
		sc := f.Cluster(n)
		c, err := client.New(sc.Config, client.Options{Scheme: app.Scheme()})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := sc.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if err := c.Create(ctx, e2eutil.NewEtcdCluster(ns, name, members, false)); err != nil {
			b.Fatal(err)
		}
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: regNS, Labels: map[string]string{fleetv1.RegistrationLabel: "true"}},
			Data:       map[string][]byte{fleetv1.KubeconfigKey: sc.Kubeconfig},
		}
		if _, err := mgmt.Secrets(regNS).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		ws = append(ws, &workload{name: n, c: c, cs: sc.Clientset})
	}
	return ws
}

// startManager runs the fleet manager in this process until the benchmark
// ends; it stops before the sandbox does.
func startManager(b *testing.B, mgmt *rest.Config, cfg settings.Config) *app.Fleet {
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
	return fm
}

func available(ctx context.Context, c client.Client) (bool, string, error) {
	ec := &etcdv1.EtcdCluster{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ec); err != nil {
		return false, "", err
	}
	return e2eutil.Available(ec), fmt.Sprintf("not Available, %d members ready", ec.Status.ReadyMembers), nil
}

func allAvailable(ws []*workload) func(context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		var waiting []string
		for _, w := range ws {
			ok, why, err := available(ctx, w.c)
			if err != nil {
				why = err.Error()
			}
			if !ok {
				waiting = append(waiting, w.name+": "+why)
			}
		}
		return len(waiting) == 0, strings.Join(waiting, "; "), nil
	}
}

// allHealed stamps each cluster when its member Pods are all replaced and
// Ready (from the watch, in memory) and then its EtcdCluster reads
// Available, and is true once every cluster is stamped.
func allHealed(ws []*workload) func(context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		var waiting []string
		for _, w := range ws {
			if !w.healed.IsZero() {
				continue
			}
			if err := w.rec.Err(); err != nil {
				return false, "", fmt.Errorf("%s: pod watch: %w", w.name, err)
			}
			ok, why := w.rec.Replaced(w.old)
			if ok {
				var err error
				if ok, why, err = available(ctx, w.c); err != nil {
					why = err.Error()
				}
			}
			if ok {
				w.healed = time.Now()
				continue
			}
			waiting = append(waiting, w.name+": "+why)
		}
		return len(waiting) == 0, strings.Join(waiting, "; "), nil
	}
}

func report(b *testing.B, ws []*workload, t0 time.Time, rebootCall time.Duration, before, after limiter.Stats) {
	var lastStarts, starts, detect, healedAt []time.Duration
	var firstTerminal, lastTerminal time.Time
	replaced := 0
	for _, w := range ws {
		reps, err := w.rec.Replacements(w.old)
		if err != nil {
			b.Fatalf("%s: %v", w.name, err)
		}
		last := slices.MaxFunc(reps, func(x, y bench.Replacement) int { return x.Created.Compare(y.Created) })
		lastStarts = append(lastStarts, last.Start())
		for _, r := range reps {
			starts, detect = append(starts, r.Start()), append(detect, r.DetectToReplace())
			if firstTerminal.IsZero() || r.Terminal.Before(firstTerminal) {
				firstTerminal = r.Terminal
			}
			if r.Terminal.After(lastTerminal) {
				lastTerminal = r.Terminal
			}
		}
		replaced += len(reps)
		healedAt = append(healedAt, w.healed.Sub(t0))
	}
	for i := range healedAt {
		healedAt[i] -= firstTerminal.Sub(t0)
	}
	heal := bench.Percentile(healedAt, 1)
	etcdStart := bench.Percentile(lastStarts, 0.5)
	paced := max(0, replaced-after.Burst)
	bound := time.Duration(float64(paced)/after.Rate*float64(time.Second)) + etcdStart
	ratio := heal.Seconds() / bound.Seconds()

	b.ReportMetric(0, "ns/op")
	b.ReportMetric(heal.Seconds(), "heal-s")
	b.ReportMetric(bound.Seconds(), "bound-s")
	b.ReportMetric(ratio, "heal/bound")
	b.ReportMetric(bench.Ms(etcdStart), "etcd-start-ms")
	b.ReportMetric(float64(len(ws)), "clusters")
	bench.Logf(b, `fleet heal (%d clusters × 1 EtcdCluster × %d members = %d replacements, limiter %g/s burst %d, node outage %s):
  heal time (first Pod terminal → every EtcdCluster Available, every Pod replaced and Ready): %.2f s   (from the reboot call: %.2f s)
    first cluster healed after %.2f s, median %.2f s; Pods seen terminal from %.2f s to %.2f s after the reboot call (graceful stop), which took %.2f s
  etcd start (per cluster, last replacement's ADDED → Ready; p50): %.0f ms   (all replacements: p50 %.0f ms)
  limiter lower bound max(0, %d − %d)/%g/s + etcd start = %.2f s
  heal / bound = %.2f   (goal ≤ %.1f: %s; from the reboot call it would be %.2f)
  detect→replace under the limiter: p50 %.0f ms, p99 %.0f ms; throttled waits %d, grants %d
  host at the end: %s`,
		len(ws), members, replaced, after.Rate, after.Burst, outage,
		heal.Seconds(), (heal + firstTerminal.Sub(t0)).Seconds(), bench.Percentile(healedAt, 0).Seconds(), bench.Percentile(healedAt, 0.5).Seconds(),
		firstTerminal.Sub(t0).Seconds(), lastTerminal.Sub(t0).Seconds(), rebootCall.Seconds(),
		bench.Ms(etcdStart), bench.Ms(bench.Percentile(starts, 0.5)),
		replaced, after.Burst, after.Rate, bound.Seconds(), ratio, goal, bench.Verdict(ratio <= goal),
		(heal+firstTerminal.Sub(t0)).Seconds()/bound.Seconds(),
		bench.Ms(bench.Percentile(detect, 0.5)), bench.Ms(bench.Percentile(detect, 0.99)),
		after.ThrottledTotal-before.ThrottledTotal, after.GrantedTotal-before.GrantedTotal, bench.HostLoad())
}
