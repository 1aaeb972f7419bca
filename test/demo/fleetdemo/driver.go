package fleetdemo

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/app"
	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

// etcdNamespace holds the demo's EtcdClusters in every workload cluster.
const etcdNamespace = "demo"

type driver struct {
	f              *sandbox.Fleet
	o              Options
	out            io.Writer
	workloads      []*sandbox.Cluster
	clients        map[string]client.Client
	probes         map[string]*etcdProbe // by workload cluster
	fleet          *app.Fleet
	mgmtKubeconfig string
	recs           map[string]*recording // by workload cluster, from before the reboot
	view           *liveView
	wasHealthy     map[string]bool // the live view's clusters ever healthy
	views          []ViewRecord
	listErr        map[string]string // by workload cluster, the last list error said
}

func newDriver(f *sandbox.Fleet, o Options, out io.Writer) (*driver, error) {
	d := &driver{f: f, o: o, out: out, clients: map[string]client.Client{}, probes: map[string]*etcdProbe{}, view: newLiveView(out), wasHealthy: map[string]bool{}, listErr: map[string]string{}}
	for _, c := range f.Clusters() {
		if c.Name == "mgmt" {
			continue
		}
		d.workloads = append(d.workloads, c)
		cl, err := client.New(c.Config, client.Options{Scheme: app.Scheme()})
		if err != nil {
			return nil, err
		}
		d.clients[c.Name] = cl
		d.probes[c.Name] = newEtcdProbe(c.Config, cl, etcdNamespace)
	}
	d.mgmtKubeconfig = filepath.Join(f.Dir, "mgmt.kubeconfig")
	return d, os.WriteFile(d.mgmtKubeconfig, f.Cluster("mgmt").Kubeconfig, 0o600)
}

// closeProbes closes the live view's etcd clients.
func (d *driver) closeProbes() {
	for _, p := range d.probes {
		p.close()
	}
}

func (d *driver) etcdName(i int) string { return fmt.Sprintf("etcd-%c", 'a'+i) }

func (d *driver) createEtcdClusters(ctx context.Context) error {
	fmt.Fprintf(d.out, "==> creating %d EtcdClusters of 3 members in each workload cluster\n", d.o.EtcdClustersPer)
	for _, w := range d.workloads {
		c := d.clients[w.Name]
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: etcdNamespace}}); client.IgnoreAlreadyExists(err) != nil {
			return err
		}
		for i := 0; i < d.o.EtcdClustersPer; i++ {
			if err := c.Create(ctx, e2eutil.NewEtcdCluster(etcdNamespace, d.etcdName(i), 3, false)); err != nil {
				return err
			}
		}
	}
	return nil
}

// ViewRecord is one workload cluster's rows of the live view, and the
// resourceVersion of the Pod list they were computed from, kept so that a
// test can check each row against the apiserver's own watch.
type ViewRecord struct {
	Phase, Workload string
	PodsRV          string
	Rows            []clusterView
}

// observe lists every workload cluster's EtcdClusters and Pods and returns
// the live view's rows, and whether every EtcdCluster is healthy.
func (d *driver) observe(ctx context.Context, phase string) ([]clusterView, bool) {
	var all []clusterView
	done := true
	for _, w := range d.workloads {
		var list etcdv1.EtcdClusterList
		var pods corev1.PodList
		err := d.clients[w.Name].List(ctx, &list, client.InNamespace(etcdNamespace))
		if err == nil {
			err = d.clients[w.Name].List(ctx, &pods, client.InNamespace(etcdNamespace))
		}
		if err != nil {
			// One failed read leaves the rows as last shown; the next
			// poll tries again. Said once per new error.
			if msg := err.Error(); d.listErr[w.Name] != msg {
				d.view.say(fmt.Sprintf("[%s] %s: %v", phase, w.Name, err))
				d.listErr[w.Name] = msg
			}
			done = false
			continue
		}
		delete(d.listErr, w.Name)
		probe := d.probes[w.Name]
		rows := viewOf(w.Name, list.Items, pods.Items, d.wasHealthy, func(cluster string, want int32) bool {
			return probe.whole(ctx, cluster, want)
		})
		d.views = append(d.views, ViewRecord{Phase: phase, Workload: w.Name, PodsRV: pods.ResourceVersion, Rows: rows})
		healthyN := 0
		for _, r := range rows {
			if r.State == healthy {
				healthyN++
			}
		}
		done = done && healthyN == d.o.EtcdClustersPer && len(rows) == d.o.EtcdClustersPer
		all = append(all, rows...)
	}
	return all, done
}

// waitHealed shows the live view every 250 ms until every
// EtcdCluster is healthy and extra (if any) agrees.
func (d *driver) waitHealed(ctx context.Context, what string, extra func() bool) error {
	start := time.Now()
	deadline := time.After(d.o.HealTimeout)
	defer d.view.done()
	for {
		rows, done := d.observe(ctx, what)
		note := ""
		if d.fleet != nil {
			if st := d.fleet.Limiter.Snapshot(); st.Waiting > 0 || what == "heal" {
				note = fmt.Sprintf("limiter: %d waiting, %.1f tokens", st.Waiting, st.TokensAvailable)
			}
		}
		d.view.show(what, time.Since(start), rows, note)
		if done && (extra == nil || extra()) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("%s: not healed within %s", what, d.o.HealTimeout)
		// 250 ms: a replacement takes about a second on an idle
		// machine, and a view should see most of its steps; two lists
		// per workload cluster each time are cheap.
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (d *driver) writeKeys(ctx context.Context) error {
	fmt.Fprintf(d.out, "==> writing %d keys to each etcd cluster (through port-forward)\n", d.o.Keys)
	return d.eachEtcd(ctx, func(w string, e *e2eutil.Etcd) error {
		for i := 0; i < d.o.Keys; i++ {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := e.Put(cctx, fmt.Sprintf("demo/%05d", i), fmt.Sprintf("value-%d", i))
			cancel()
			if err != nil {
				return err
			}
		}
		return nil
	})
}

func (d *driver) verifyKeys(ctx context.Context) error {
	return d.eachEtcd(ctx, func(w string, e *e2eutil.Etcd) error {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		resp, err := e.Get(cctx, "demo/", clientv3.WithPrefix())
		if err != nil {
			return err
		}
		if len(resp.Kvs) != d.o.Keys {
			return fmt.Errorf("cluster %s: %d keys, want %d", w, len(resp.Kvs), d.o.Keys)
		}
		for i, kv := range resp.Kvs {
			if string(kv.Value) != fmt.Sprintf("value-%d", i) {
				return fmt.Errorf("cluster %s: key %s has %q", w, kv.Key, kv.Value)
			}
		}
		return nil
	})
}

// eachEtcd runs fn against every etcd cluster of every workload cluster.
func (d *driver) eachEtcd(ctx context.Context, fn func(w string, e *e2eutil.Etcd) error) error {
	for _, w := range d.workloads {
		c := d.clients[w.Name]
		for i := 0; i < d.o.EtcdClustersPer; i++ {
			name := d.etcdName(i)
			e, err := e2eutil.DialEtcd(ctx, w.Config, c, etcdNamespace, name)
			if err != nil {
				return err
			}
			err = fn(w.Name+"/"+name, e)
			e.Close()
			if err != nil {
				return fmt.Errorf("%s/%s: %w", w.Name, name, err)
			}
		}
	}
	return nil
}

// replacements sums the members' replacement counters per cluster.
func (d *driver) replacements(ctx context.Context) map[string]int32 {
	out := map[string]int32{}
	for _, w := range d.workloads {
		var list etcdv1.EtcdMemberList
		if err := d.clients[w.Name].List(ctx, &list, client.InNamespace(etcdNamespace)); err != nil {
			continue
		}
		for _, m := range list.Items {
			if m.Status.Replacement != nil {
				out[w.Name] += m.Status.Replacement.Total
			}
		}
	}
	return out
}

// report prints the heal time and the replacements per cluster since
// before, and returns the replacement totals it counted.
func (d *driver) report(ctx context.Context, healed time.Duration, before map[string]int32) map[string]int32 {
	after := d.replacements(ctx)
	stats := d.fleet.Limiter.Snapshot()
	fmt.Fprintf(d.out, "\n==> healed in %s (limiter %.0f/s, burst %d)\n", healed.Round(100*time.Millisecond), stats.Rate, stats.Burst)
	for _, w := range sortedKeys(after) {
		fmt.Fprintf(d.out, "  %s: %d replacements, %d throttled waits\n", w, after[w]-before[w], stats.ThrottledByCluster[w])
	}
	return after
}

// keep leaves the fleet up until interrupted.
func (d *driver) keep(ctx context.Context) error {
	fmt.Fprintf(d.out, "\n==> fleet left running (Ctrl-C to stop). Kubeconfigs:\n  mgmt: %s\n", d.mgmtKubeconfig)
	for _, w := range d.workloads {
		p := filepath.Join(d.f.Dir, w.Name+".kubeconfig")
		if err := os.WriteFile(p, w.Kubeconfig, 0o600); err != nil {
			return err
		}
		fmt.Fprintf(d.out, "  %s: %s\n", w.Name, p)
	}
	<-ctx.Done()
	return nil
}

// waitDashboard gives the dashboard, which writes each object at most
// every 2 s, the time to show the healed fleet and the replacement totals
// the report counted (want), so that the tables printed next agree with
// it. It gives up quietly after 15 s: the tables then show what the
// dashboard says.
func (d *driver) waitDashboard(ctx context.Context, want map[string]int32) {
	var total int64
	for _, n := range want {
		total += int64(n)
	}
	mgmt := d.fleet.Manager.GetLocalManager().GetClient()
	_ = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		for w, n := range want {
			fc := &fleetv1.FleetCluster{}
			if err := mgmt.Get(ctx, types.NamespacedName{Namespace: Namespace, Name: w}, fc); err != nil ||
				fc.Status.ReplacementsTotal != int64(n) || fc.Status.MembersReady != fc.Status.MembersDesired {
				return false, nil
			}
		}
		f := &fleetv1.Fleet{}
		err := mgmt.Get(ctx, types.NamespacedName{Name: fleetv1.FleetName}, f)
		return err == nil && f.Status.ClustersDegraded == 0 && f.Status.ReplacementsTotal >= total, nil
	})
}
