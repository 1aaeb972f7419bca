package lincheck

import (
	"context"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
)

// Target is one EtcdCluster, reached through port-forward on its
// apiserver.
type Target struct {
	Config    *rest.Config
	Client    client.Client
	Namespace string
	Cluster   string
	// Name names the target in messages and file names (default
	// Namespace/Cluster); a suite with several workload clusters says
	// which.
	Name string
	// Options size the workload; zero values take the defaults.
	Options Options
}

// Running is a workload started by Start.
type Running struct {
	workload *Workload
	etcd     *e2eutil.Etcd
	stopped  bool
	history  History
}

// reconnect keeps the clients' gRPC reconnect backoff short: gRPC's
// default grows to 2 minutes, so after a long outage the clients would
// measure their own backoff rather than the cluster's unavailability.
var reconnect = grpc.WithConnectParams(grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
	MinConnectTimeout: 5 * time.Second,
})

// Dial connects to the target's members through port-forward, with the
// workload's reconnect backoff; for code outside a spec (benchmarks).
func Dial(ctx context.Context, t Target) (*e2eutil.Etcd, error) {
	return e2eutil.DialEtcd(ctx, t.Config, t.Client, t.Namespace, t.Cluster, reconnect)
}

// Start starts a workload on the target and returns once the clients took
// a write, so that the history begins with the cluster serving: a write
// acknowledged before the fault and lost in it is the first thing to
// catch. Call StopAndCheck after the heal. If the spec ends first (it
// failed), the workload is stopped unchecked.
func Start(ctx context.Context, t Target) *Running {
	GinkgoHelper()
	etcd, err := Dial(ctx, t)
	Expect(err).NotTo(HaveOccurred(), "dialling %s/%s for the workload", t.Namespace, t.Cluster)
	name := t.Name
	if name == "" {
		name = t.Namespace + "/" + t.Cluster
	}
	r := &Running{etcd: etcd, workload: Run(etcd.Client, name, t.Options)}
	DeferCleanup(func() { r.Stop() })
	Eventually(func() bool { return r.workload.WroteAfter(time.Time{}) }).WithTimeout(AfterHealTimeout).
		WithPolling(20*time.Millisecond).Should(BeTrue(), "the clients of %s took no write before the fault", name)
	return r
}

// StartIn is Start on EtcdCluster ns/name of cluster in an
// OperatedSandbox (the memberctl e2e suites' setup).
func StartIn(ctx context.Context, sb *e2eutil.OperatedSandbox, cluster, ns, name string) *Running {
	return Start(ctx, Target{Config: sb.Fleet.Cluster(cluster).Config, Client: sb.Clients[cluster], Namespace: ns, Cluster: name})
}

// StartAll starts one workload per target.
func StartAll(ctx context.Context, targets ...Target) Runnings {
	GinkgoHelper()
	var out Runnings
	for _, t := range targets {
		out = append(out, Start(ctx, t))
	}
	return out
}

// SetEndpoints points the workload's client at these members: a spec
// that replaces every member (a memory cluster's roll) keeps the clients
// on the members that exist.
func (r *Running) SetEndpoints(endpoints ...string) { r.etcd.SetEndpoints(endpoints...) }

// Stop stops the workload and closes its client, once; it returns the
// history.
func (r *Running) Stop() History {
	if !r.stopped {
		r.stopped = true
		r.history = r.workload.Stop()
		r.etcd.Close()
	}
	return r.history
}

// AfterHealTimeout bounds how long StopAndCheck waits for the clients to
// read every key once more and take a write: a healed cluster that serves
// no client within it fails the spec.
const AfterHealTimeout = 30 * time.Second

// StopAndCheck, called once the spec has seen the cluster heal, lets the
// clients read every key once more and write, stops them, and fails the
// spec unless the history is linearizable, with the first offending
// operations and the path of porcupine's visualization. The verdict's
// summary goes to the report.
func (r *Running) StopAndCheck() Result {
	GinkgoHelper()
	r.waitServedSince(time.Now())
	return r.stopAndCheck()
}

// waitServedSince waits until the clients read every key and wrote after
// healed: until then a write lost in the heal could go unseen, and the
// longest gap between writes would not span the outage.
func (r *Running) waitServedSince(healed time.Time) {
	GinkgoHelper()
	if r.stopped {
		return
	}
	Eventually(func() bool { return r.workload.ReadEveryKeyAfter(healed) && r.workload.WroteAfter(healed) }).
		WithTimeout(AfterHealTimeout).WithPolling(50*time.Millisecond).
		Should(BeTrue(), "the clients of %s could not read every key and write since the heal", r.workload.name)
}

func (r *Running) stopAndCheck() Result {
	GinkgoHelper()
	h := r.Stop()
	res := Check(h, OutputDir(), DefaultCheckTimeout)
	AddReportEntry("linearizability check of "+h.Name, res.Summary())
	Expect(res.Err()).NotTo(HaveOccurred())
	Expect(res.History.Count()[OK]).NotTo(BeZero(), "the workload on %s got no response at all: it checked nothing", h.Name)
	return res
}

// Runnings are several workloads, one per cluster.
type Runnings []*Running

// StopAndCheck is Running.StopAndCheck for all: every cluster has
// healed, so all wait for their reads together, then each is checked.
func (rs Runnings) StopAndCheck() []Result {
	GinkgoHelper()
	healed := time.Now()
	for _, r := range rs {
		r.waitServedSince(healed)
	}
	for _, r := range rs {
		r.Stop()
	}
	var out []Result
	for _, r := range rs {
		out = append(out, r.stopAndCheck())
	}
	return out
}

// OutputDir is where visualizations go: $LINCHECK_DIR if set, else the
// system's temporary directory.
func OutputDir() string {
	if d := os.Getenv("LINCHECK_DIR"); d != "" {
		return d
	}
	return os.TempDir()
}
