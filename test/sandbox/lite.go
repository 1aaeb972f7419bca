package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// LiteOptions configure StartLite.
type LiteOptions struct {
	// Clusters to start, by name.
	Clusters []string
	// CRDDirs are installed in every cluster.
	CRDDirs []string
	// AssetsDir holds kube-apiserver and etcd (default $KUBEBUILDER_ASSETS).
	AssetsDir string
	// StartConcurrency bounds how many apiservers start at once (default
	// DefaultStartConcurrency); StartTimeout bounds each (as Options).
	StartConcurrency int
	StartTimeout     time.Duration
}

// LiteFleet is the lightest real form of many clusters: one etcd, and one
// kube-apiserver per cluster storing under its own --etcd-prefix, with
// the watch cache off (each apiserver then holds no copy of its objects),
// and no controller-manager, kubelet or Nodes. Each cluster serves the
// real API, discovery, RBAC and watches, which is all an idle cluster
// asks of a fleet manager: connect, pre-flight, cache, probe.
type LiteFleet struct {
	etcd *envtest.Etcd
	envs []*envtest.Environment
	// Clusters in the order named.
	Clusters []*LiteCluster
}

// LiteCluster is one apiserver of a LiteFleet.
type LiteCluster struct {
	Name string
	// Config and Kubeconfig are an admin's (system:masters).
	Config     *rest.Config
	Kubeconfig []byte
	Clientset  kubernetes.Interface
	// PID is the apiserver's process, for its RSS.
	PID int
}

// StartLite starts the shared etcd, then the apiservers,
// StartConcurrency at a time. On error whatever started is stopped.
func StartLite(_ context.Context, opts LiteOptions) (_ *LiteFleet, err error) {
	o := Options{AssetsDir: opts.AssetsDir, StartTimeout: opts.StartTimeout, StartConcurrency: opts.StartConcurrency, Dir: os.TempDir()}
	if _, err := o.setDefaults(); err != nil {
		return nil, err
	}
	f := &LiteFleet{etcd: &envtest.Etcd{Path: filepath.Join(o.AssetsDir, "etcd"), StartTimeout: o.StartTimeout, Out: io.Discard, Err: io.Discard}}
	// The etcd keeps every cluster's objects; its default 2 GiB quota and
	// snapshot settings are plenty for idle clusters.
	if err := f.etcd.Start(); err != nil {
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Stop()
		}
	}()
	f.Clusters = make([]*LiteCluster, len(opts.Clusters))
	f.envs = make([]*envtest.Environment, len(opts.Clusters))
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	slots := make(chan struct{}, o.StartConcurrency)
	for i, name := range opts.Clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			env, c, err := f.startLite(name, i, opts.CRDDirs, o)
			mu.Lock()
			defer mu.Unlock()
			f.envs[i] = env
			if err != nil {
				errs = append(errs, fmt.Errorf("cluster %s: %w", name, err))
				return
			}
			f.Clusters[i] = c
		}()
	}
	wg.Wait()
	return f, errors.Join(errs...)
}

// startLite starts cluster i's apiserver on the shared etcd.
func (f *LiteFleet) startLite(name string, i int, crdDirs []string, o Options) (*envtest.Environment, *LiteCluster, error) {
	api := &envtest.APIServer{Path: filepath.Join(o.AssetsDir, "kube-apiserver"), StartTimeout: o.StartTimeout, Out: io.Discard, Err: io.Discard}
	api.Configure().
		Set("etcd-prefix", fmt.Sprintf("/lite/%d", i)).
		// No watch cache: each apiserver would otherwise keep every object
		// of its cluster in memory, the largest part of an idle one.
		Set("watch-cache", "false")
	env := &envtest.Environment{
		ControlPlane:      envtest.ControlPlane{Etcd: f.etcd, APIServer: api},
		CRDDirectoryPaths: crdDirs, ErrorIfCRDPathMissing: true,
		ControlPlaneStartTimeout: o.StartTimeout, ControlPlaneStopTimeout: 30 * time.Second,
	}
	if _, err := env.Start(); err != nil {
		return env, nil, fmt.Errorf("start apiserver: %w", err)
	}
	admin, err := env.AddUser(envtest.User{Name: "sandbox-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return env, nil, err
	}
	c := &LiteCluster{Name: name, Config: admin.Config()}
	if c.Kubeconfig, err = kubeconfigFor(c.Config, name, "sandbox-admin"); err != nil {
		return env, nil, err
	}
	if c.Clientset, err = kubernetes.NewForConfig(c.Config); err != nil {
		return env, nil, err
	}
	c.PID = pidWithArg("--etcd-prefix=" + api.Configure().Get("etcd-prefix").Get(nil)[0])
	return env, c, nil
}

// pidWithArg finds the process whose command line has arg (envtest does
// not expose its processes' IDs); 0 if none.
func pidWithArg(arg string) int {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && slices.Contains(strings.Split(string(cmdline), "\x00"), arg) {
			return pid
		}
	}
	return 0
}

// Stop stops every apiserver, then the etcd. (An Environment's Stop would
// stop the shared etcd with the first apiserver.)
func (f *LiteFleet) Stop() error {
	var errs []error
	for _, env := range f.envs {
		if env != nil && env.ControlPlane.APIServer != nil {
			errs = append(errs, env.ControlPlane.APIServer.Stop())
		}
	}
	errs = append(errs, f.etcd.Stop())
	return errors.Join(errs...)
}
