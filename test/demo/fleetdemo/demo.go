package fleetdemo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/fleet/app"
	"github.com/etcdfleet/etcdfleet/fleet/ctl"
	"github.com/etcdfleet/etcdfleet/fleet/settings"
	"github.com/etcdfleet/etcdfleet/test/bench"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
	"github.com/etcdfleet/etcdfleet/test/sandbox/kubelet"
	"github.com/etcdfleet/etcdfleet/test/sandbox/objstore"
)

// Options shape the demo. Defaults live in DefaultOptions.
type Options struct {
	Clusters        int
	EtcdClustersPer int
	Keys            int
	Rate            float64
	Burst           int
	Keep            bool
	// SandboxOnly starts the clusters and waits, for trying the chart and
	// etcdfleetctl by hand.
	SandboxOnly bool
	// HealTimeout bounds the wait for the fleet to heal.
	HealTimeout time.Duration
	// Outage is how long each rebooted Node stays down.
	Outage time.Duration
	// Backups runs the backup part after the heal.
	Backups bool
	// TimelinePath is where the heal's picture is written.
	TimelinePath string
	// Grants, installed in the manager's logger (GrantLog.Sink), gives
	// the picture its "waiting for the limiter" spans; nil leaves them
	// out (a member is terminal until its Pod is deleted).
	Grants *GrantLog
}

// Result is what a run saw, for tests.
type Result struct {
	// Healed is the reboot call → every EtcdCluster healthy and every
	// member Pod replaced and Ready.
	Healed time.Duration
	// Views is every row the live view computed, with the Pod list each
	// came from; HealPods the Pod watch events of the heal, by workload
	// cluster, from just before the reboot.
	Views    []ViewRecord
	HealPods map[string][]bench.PodEvent
}

// DefaultOptions: 3 workload clusters × 2 EtcdClusters × 3 members, the
// manager's default limiter.
func DefaultOptions() Options {
	d := settings.Default()
	return Options{Clusters: 3, EtcdClustersPer: 2, Keys: 100, Rate: d.Limiter.Rate, Burst: d.Limiter.Burst, HealTimeout: 5 * time.Minute,
		Outage: 2 * time.Second, Backups: true, TimelinePath: "heal-timeline.svg"}
}

// Namespace is where registration Secrets live in the demo.
const Namespace = "etcdfleet-system"

// Run runs the demo, printing to out.
func Run(ctx context.Context, out io.Writer, o Options) (*Result, error) {
	res := &Result{}
	err := run(ctx, out, o, res)
	return res, err
}

func run(ctx context.Context, out io.Writer, o Options, res *Result) error {
	start := time.Now()
	names := []string{"mgmt"}
	for i := 1; i <= o.Clusters; i++ {
		names = append(names, fmt.Sprintf("w%d", i))
	}
	fmt.Fprintf(out, "==> starting %d real clusters (kube-apiserver, etcd, controller-manager, simulated kubelet with 3 nodes each)\n", len(names))
	f, err := sandbox.Start(ctx, sandbox.Options{Clusters: names, CRDDirs: crdDirs()})
	if err != nil {
		return err
	}
	defer f.Stop()
	fmt.Fprintf(out, "    up in %s\n", time.Since(start).Round(time.Second))
	d, err := newDriver(f, o, out)
	if err != nil {
		return err
	}
	defer func() { res.Views = d.views }()
	defer d.closeProbes() // before f.Stop: the probes port-forward through it
	if o.SandboxOnly {
		return d.keep(ctx)
	}
	if err := d.register(ctx); err != nil {
		return err
	}
	stopMgr, err := d.startManager(ctx)
	if err != nil {
		return err
	}
	defer stopMgr()
	if err := d.createEtcdClusters(ctx); err != nil {
		return err
	}
	if err := d.waitHealed(ctx, "bootstrap", nil); err != nil {
		d.explain()
		return err
	}
	if err := d.writeKeys(ctx); err != nil {
		return err
	}
	d.kubectl("get", "fleetclusters", "-n", Namespace)
	before := d.replacements(ctx)
	fmt.Fprintf(out, "\n==> rebooting every node of every cluster at once (graceful node shutdown: Pods left Failed or Succeeded)\n")
	stopRec, err := d.recordPods(ctx)
	if err != nil {
		return err
	}
	defer stopRec()
	rebootAt := time.Now()
	// The live view starts with the reboot: RebootAll stops each Node
	// gracefully, one after another, and returns when the last one is
	// down, by when the first clusters are already healing.
	rebooted := make(chan error, 1)
	go func() {
		rebooted <- f.RebootAll(ctx, kubelet.RebootOptions{Phase: kubelet.Alternate, Outage: o.Outage})
	}()
	var rebootDone bool
	var rebootErr error
	healedOrFailed := func() bool {
		if !rebootDone {
			select {
			case rebootErr = <-rebooted:
				rebootDone = true
			default:
			}
		}
		return rebootDone && (rebootErr != nil || d.replaced())
	}
	err = d.waitHealed(ctx, "heal", healedOrFailed)
	if !rebootDone {
		rebootErr = <-rebooted
	}
	if err = errors.Join(rebootErr, err); err != nil {
		return err
	}
	healed := time.Since(rebootAt)
	res.Healed = healed
	res.HealPods = map[string][]bench.PodEvent{}
	for w, r := range d.recs {
		res.HealPods[w] = r.rec.Events()
	}
	if err := d.writePicture(d.timeline(rebootAt, healed)); err != nil {
		return err
	}
	if err := d.verifyKeys(ctx); err != nil {
		return err
	}
	d.waitDashboard(ctx, d.report(ctx, healed, before))
	d.kubectl("get", "fleetclusters", "-n", Namespace)
	d.kubectl("get", "fleet")
	if o.Backups {
		stopS3, err := d.backUp(ctx)
		if err != nil {
			return err
		}
		defer stopS3()
		d.waitDashboardBackups(ctx)
		d.kubectl("get", "fleetclusters", "-n", Namespace)
	}
	fmt.Fprintf(out, "\n==> every key verified; demo done in %s\n", time.Since(start).Round(time.Second))
	if o.Keep {
		return d.keep(ctx)
	}
	return nil
}

func crdDirs() []string {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	return []string{filepath.Join(root, "config", "crd", "workload"), filepath.Join(root, "config", "crd", "management")}
}

// register registers each workload cluster as a user does, with
// etcdfleetctl register in the namespace its EtcdClusters live in: the
// manager's ServiceAccount, its RBAC there, the admission policies, and a
// token of that ServiceAccount in the registration Secret. The demo's
// heals and backups run under them.
func (d *driver) register(ctx context.Context) error {
	fmt.Fprintf(d.out, "==> registering %d workload clusters with etcdfleetctl register --namespaces %s\n", len(d.workloads), etcdNamespace)
	mgmt := d.f.Cluster("mgmt")
	if _, err := mgmt.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}, metav1.CreateOptions{}); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	for _, w := range d.workloads {
		// register grants namespaces that exist.
		if err := d.clients[w.Name].Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: etcdNamespace}}); client.IgnoreAlreadyExists(err) != nil {
			return err
		}
		if err := ctl.Register(ctx, ctl.RegisterOptions{Name: w.Name, Workload: w.Config, Management: mgmt.Config,
			Namespace: Namespace, WatchNamespaces: []string{etcdNamespace},
			// The demo's object store is on a loopback address, which the
			// admission policies refuse unless allowed, as a user would.
			AllowedS3Endpoints: []string{objstore.IP}, Out: io.Discard}); err != nil {
			return fmt.Errorf("register %s: %w", w.Name, err)
		}
	}
	return nil
}

// startManager runs the fleet manager in process against mgmt.
func (d *driver) startManager(ctx context.Context) (func(), error) {
	c := settings.Default()
	c.Namespace, c.Limiter.Rate, c.Limiter.Burst = Namespace, d.o.Rate, d.o.Burst
	// One snapshot start a second, rather than the default's one per 10 s,
	// so that the demo's first backups do not queue for a minute.
	c.Snapshots.StartsPerMinute = 60
	c.LeaderElection, c.MetricsBindAddress, c.HealthProbeBindAddress = false, "0", "0"
	fm, err := app.New(d.f.Cluster("mgmt").Config, c)
	if err != nil {
		return nil, err
	}
	d.fleet = fm
	fmt.Fprintf(d.out, "==> running the fleet manager (limiter %.0f/s, burst %d)\n", c.Limiter.Rate, c.Limiter.Burst)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- fm.Start(ctx) }()
	return func() { cancel(); <-done }, nil
}

// explain prints what a user would look at when the fleet does not come
// up: the FleetClusters' conditions and the workload clusters' Warning
// Events.
func (d *driver) explain() {
	d.kubectl("get", "fleetclusters", "-n", Namespace, "-o", "wide")
	d.kubectl("get", "fleetclusters", "-n", Namespace, "-o",
		"custom-columns=NAME:.metadata.name,CONDITIONS:.status.conditions[*].message")
	for _, w := range d.workloads {
		fmt.Fprintf(d.out, "\n$ kubectl --context %s get events -n %s --field-selector type=Warning\n", w.Name, etcdNamespace)
		kc := filepath.Join(d.f.Dir, w.Name+".kubeconfig")
		if err := os.WriteFile(kc, w.Kubeconfig, 0o600); err != nil {
			continue
		}
		cmd := exec.Command(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), "--kubeconfig", kc,
			"get", "events", "-n", etcdNamespace, "--field-selector", "type=Warning")
		cmd.Stdout, cmd.Stderr = d.out, d.out
		_ = cmd.Run()
	}
}

// kubectl prints what `kubectl get` shows on the management cluster.
func (d *driver) kubectl(args ...string) {
	fmt.Fprintf(d.out, "\n$ kubectl %s\n", joinArgs(args))
	cmd := exec.Command(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), append([]string{"--kubeconfig", d.mgmtKubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = d.out, d.out
	_ = cmd.Run()
}

func joinArgs(a []string) string {
	s := ""
	for i, x := range a {
		if i > 0 {
			s += " "
		}
		s += x
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
