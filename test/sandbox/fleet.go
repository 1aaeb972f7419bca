package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/etcdfleet/etcdfleet/test/sandbox/kubelet"
)

// Options configure Start. Defaults live in setDefaults.
type Options struct {
	// Clusters to start, by name (for example mgmt, w1, w2, w3).
	Clusters []string
	// Nodes per cluster (default 3).
	Nodes int
	// CRDDirs are installed in every cluster before its controller-manager
	// starts.
	CRDDirs []string
	// AssetsDir holds kube-apiserver, kube-controller-manager and etcd
	// (default $KUBEBUILDER_ASSETS, as printed by test/tools/assets.sh).
	AssetsDir string
	// Dir holds every cluster's state (default a new temporary directory,
	// removed by Stop).
	Dir string
	// StartTimeout bounds one control plane's start. Starts are CPU-bound
	// and run concurrently on 2 cores, so the default is a generous 90 s
	// (or $KUBEBUILDER_CONTROLPLANE_START_TIMEOUT).
	StartTimeout time.Duration
	// StartConcurrency bounds how many control planes start at once
	// (default DefaultStartConcurrency). A start is CPU-bound for a few
	// seconds; 31 at once on 2 cores starve each other past StartTimeout.
	StartConcurrency int
	// Kubelet tunes the simulated kubelets (restart backoff, probe caps).
	Kubelet kubelet.Options
	// Audit makes every apiserver keep an audit log (metadata only), which
	// Cluster.Audit reads: who sent which request, counted on the
	// apiserver's side.
	Audit bool
	Logf  func(format string, args ...any)

	liteLog io.Writer // LiteOptions.Log
}

// DefaultStartConcurrency starts four control planes at a time: enough to
// overlap one's I/O waits with another's CPU, few enough that each gets
// a fair share of two cores.
const DefaultStartConcurrency = 4

// CRDInstallWait bounds the wait for a new apiserver to serve the CRDs
// installed on it. envtest's default, 10 s, suits one apiserver on an
// idle machine; a suite starting a dozen on two cores while another suite
// runs has taken longer (the pacing suite, at a load average of 50). It
// bounds a failure and is not a figure any test measures.
const CRDInstallWait = 2 * time.Minute

func (o *Options) setDefaults() (cleanup func(), err error) {
	cleanup = func() {}
	if o.StartConcurrency <= 0 {
		o.StartConcurrency = DefaultStartConcurrency
	}
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.AssetsDir == "" {
		o.AssetsDir = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if o.AssetsDir == "" {
		return cleanup, errors.New("sandbox: KUBEBUILDER_ASSETS is not set; run the tests with `make test`, " +
			"or export KUBEBUILDER_ASSETS=\"$(test/tools/assets.sh)\"")
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 90 * time.Second
		if d, err := time.ParseDuration(os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT")); err == nil {
			o.StartTimeout = d
		}
	}
	if o.Dir == "" {
		dir, err := os.MkdirTemp("", "etcdfleet-sandbox-")
		if err != nil {
			return cleanup, err
		}
		o.Dir, cleanup = dir, func() { _ = os.RemoveAll(dir) }
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return cleanup, nil
}

// Fleet is a set of sandbox clusters started together.
type Fleet struct {
	clusters map[string]*Cluster
	names    []string
	cleanup  func()
	// Dir holds every cluster's logs and state.
	Dir string
}

// Start brings up the named clusters, Options.StartConcurrency at a time
// (starts are CPU-bound: about 2-4 s of CPU each). On error, whatever
// started is stopped.
func Start(ctx context.Context, opts Options) (*Fleet, error) {
	if len(opts.Clusters) == 0 {
		return nil, errors.New("sandbox: no clusters named")
	}
	cleanup, err := opts.setDefaults()
	if err != nil {
		return nil, err
	}
	if opts.Kubelet.AgentBinary == "" {
		if opts.Kubelet.AgentBinary, err = acquireAgent(); err != nil {
			cleanup()
			return nil, err
		}
		prev := cleanup
		cleanup = func() { prev(); releaseAgent() }
	}
	f := &Fleet{clusters: map[string]*Cluster{}, names: append([]string(nil), opts.Clusters...), cleanup: cleanup, Dir: opts.Dir}
	ips := kubelet.NewIPAllocator()
	var mu sync.Mutex
	err = startEach(opts.Clusters, opts.StartConcurrency, func(_ int, name string) error {
		c, err := startCluster(ctx, name, opts, ips)
		if err == nil {
			mu.Lock()
			f.clusters[name] = c
			mu.Unlock()
		}
		return err
	})
	if err != nil {
		_ = f.Stop()
		return nil, err
	}
	return f, nil
}

// startEach calls start for every name, at most concurrency at a time,
// and joins the errors, each naming its cluster.
func startEach(names []string, concurrency int, start func(i int, name string) error) error {
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	slots := make(chan struct{}, concurrency)
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			err := start(i, name)
			<-slots
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("cluster %s: %w", name, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Cluster returns the named cluster, or nil.
func (f *Fleet) Cluster(name string) *Cluster { return f.clusters[name] }

// Clusters returns the clusters in the order they were named.
func (f *Fleet) Clusters() []*Cluster {
	out := make([]*Cluster, 0, len(f.names))
	for _, n := range f.names {
		if c := f.clusters[n]; c != nil {
			out = append(out, c)
		}
	}
	return out
}

// Stop stops every cluster concurrently and leaves no process behind.
func (f *Fleet) Stop() error {
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	for _, c := range f.clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.stop(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("cluster %s: %w", c.Name, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	f.cleanup()
	return errors.Join(errs...)
}

// RebootAll reboots every Node of every cluster at once.
func (f *Fleet) RebootAll(ctx context.Context, opts kubelet.RebootOptions) error {
	return f.eachCluster(func(c *Cluster) error { return c.Reboot(ctx, opts) })
}

// PowerLossAll cuts the power of every Node of every cluster at once; see
// kubelet.Kubelet.PowerLoss.
func (f *Fleet) PowerLossAll(ctx context.Context, outage time.Duration) error {
	return f.eachCluster(func(c *Cluster) error { return c.PowerLoss(ctx, outage) })
}

// eachCluster runs fault on every cluster concurrently.
func (f *Fleet) eachCluster(fault func(*Cluster) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, c := range f.Clusters() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fault(c); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Names lists the clusters, sorted.
func (f *Fleet) Names() []string {
	n := append([]string(nil), f.names...)
	sort.Strings(n)
	return n
}
