package replace

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/datadirguard"
	"github.com/etcdfleet/etcdfleet/memberctl/operator"
	"github.com/etcdfleet/etcdfleet/test/bench"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox/kubelet"
)

const plNS, plName = "benchpl", "mem"

// BenchmarkPowerLossReplace cuts the power of the node of one member of a
// 3-member memory EtcdCluster BENCH_POWERLOSSES times (default 5). From
// the apiserver's Pod watch it times the first event showing the member's
// data-dir guard refusing (DataDirLost) → the ADDED event of the Pod of
// the new member that replaces it, which includes removing the old member
// from etcd. It reports the p50 beside BenchmarkDetectReplace's
// terminal-Pod figure, which has no membership change in it.
func BenchmarkPowerLossReplace(b *testing.B) {
	losses := bench.EnvInt(b, "BENCH_POWERLOSSES", 5)
	bench.QuietLogs()
	ctx := b.Context()
	f := bench.StartSandbox(b, ctx, "benchpl")
	wc := f.Cluster("benchpl")
	stop, err := e2eutil.RunOperator(context.Background(), wc.Config, operator.PortForward, e2eutil.OperatorOptions())
	if err != nil {
		b.Fatalf("operator: %v", err)
	}
	b.Cleanup(stop)
	scheme, err := e2eutil.NewScheme()
	if err != nil {
		b.Fatal(err)
	}
	c, err := client.New(wc.Config, client.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := wc.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: plNS}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if err := c.Create(ctx, e2eutil.NewEtcdCluster(plNS, plName, 3, true)); err != nil {
		b.Fatal(err)
	}
	var samples []time.Duration
	for i := 1; i <= losses; i++ {
		d, err := powerLossOnce(ctx, wc.Kubelet, wc.Clientset, c)
		if err != nil {
			b.Fatalf("power loss %d: %v", i, err)
		}
		samples = append(samples, d)
		bench.Logf(b, "power loss %d/%d: DataDirLost seen → new member's Pod created %.1f ms", i, losses, bench.Ms(d))
	}
	p50 := bench.Percentile(samples, 0.5)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(bench.Ms(p50), "powerloss-detect-replace-p50-ms")
	b.ReportMetric(float64(len(samples)), "samples")
	bench.Logf(b, `single-cluster power-loss detect→replace (%d samples, 3-member memory cluster, operator over port-forward):
  DataDirLost seen → new member's Pod created: p50 %.1f ms, max %.1f ms (includes the etcd member removal; terminal-Pod path: see BenchmarkDetectReplace)
  host at the end: %s`, len(samples), bench.Ms(p50), bench.Ms(bench.Percentile(samples, 1)), bench.HostLoad())
}

// settledFor is how long the cluster runs Available before each power
// loss. etcd refuses to add a member until every voter has been connected
// to the leader for 5 s (its strict reconfiguration check), and the
// previous loss's successor was promoted just before the cluster became
// Available again: cut at once, every loss would measure etcd's guard
// after the previous replacement, not a power loss of a running cluster.
// A loss that takes the leader still meets the guard (the new leader's
// connections are new); those samples show it.
const settledFor = 6 * time.Second

// powerLossOnce waits until the cluster is Available and has been for
// settledFor, cuts the power of the first member's node, and times
// DataDirLost → the new member's Pod.
func powerLossOnce(ctx context.Context, k *kubelet.Kubelet, cs kubernetes.Interface, c client.Client) (time.Duration, error) {
	for _, wait := range []time.Duration{0, settledFor} {
		time.Sleep(wait)
		if err := bench.Poll(ctx, 100*time.Millisecond, 3*time.Minute, plAvailable(c)); err != nil {
			return 0, fmt.Errorf("settle: %w", err)
		}
	}
	pods, err := cs.CoreV1().Pods(plNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	old := map[string]bool{}
	for _, p := range pods.Items {
		old[p.Name] = true
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	victim := pods.Items[0]
	w, err := cs.CoreV1().Pods(plNS).Watch(ctx, metav1.ListOptions{ResourceVersion: pods.ResourceVersion})
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	if err := k.PowerLoss(ctx, victim.Spec.NodeName, time.Second); err != nil {
		return 0, err
	}
	var detected time.Time
	timeout := time.After(3 * time.Minute)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return 0, fmt.Errorf("pod watch closed")
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				continue
			}
			now := time.Now()
			if lost, _ := datadirguard.DataDirLost(p); lost && p.Name == victim.Name && detected.IsZero() {
				detected = now
			}
			if ev.Type == watch.Added && !old[p.Name] {
				if detected.IsZero() {
					return 0, fmt.Errorf("new Pod %s before the guard reported DataDirLost", p.Name)
				}
				return now.Sub(detected), nil
			}
		case <-timeout:
			return 0, fmt.Errorf("no replacement within 3 min (DataDirLost seen: %v)", !detected.IsZero())
		}
	}
}

func plAvailable(c client.Client) func(context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		ec := &v1alpha1.EtcdCluster{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: plNS, Name: plName}, ec); err != nil {
			return false, "", err
		}
		return e2eutil.Available(ec), fmt.Sprintf("EtcdCluster not Available: ready members %d", ec.Status.ReadyMembers), nil
	}
}
