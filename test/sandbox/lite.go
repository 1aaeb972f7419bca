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
	// Knobs trim each apiserver (default DefaultLiteKnobs; an empty
	// LiteKnobs is envtest's plain apiserver with the watch cache off).
	Knobs *LiteKnobs
	// Log receives the apiservers' output (default: dropped).
	Log io.Writer
	// AuditDir, if set, gets the audit logs of the clusters named in
	// Audited (all if empty), <name>.audit.log (JSON, metadata only; see
	// AuditLog): who sent what, which a request counter cannot tell.
	// Auditing a sample keeps its cost off a large fleet.
	AuditDir string
	Audited  []string
}

// LiteFleet is the lightest real form of many clusters: one etcd, and one
// kube-apiserver per cluster storing under its own --etcd-prefix, with
// the watch cache off (each apiserver then holds no copy of its objects),
// and no controller-manager, kubelet or Nodes. Each cluster serves the
// real API, discovery, RBAC and watches, which is all an idle cluster
// asks of a fleet manager: connect, pre-flight, cache, probe.
type LiteFleet struct {
	etcd *envtest.Etcd
	apis []*envtest.APIServer
	// binary is the apiserver to run: a script in its own directory when
	// the knobs set Go environment variables (removed by Stop).
	binary string
	// Clusters in the order named.
	Clusters []*LiteCluster
	// auditDir, audited and auditPolicy are LiteOptions.AuditDir and
	// Audited, and the policy file written there ("" without auditing).
	auditDir, auditPolicy string
	audited               []string
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
// StartConcurrency at a time, each with a start timeout stretched by the
// host's load and tried up to liteStartAttempts times. On error whatever
// started is stopped.
func StartLite(_ context.Context, opts LiteOptions) (_ *LiteFleet, err error) {
	o := Options{AssetsDir: opts.AssetsDir, StartTimeout: opts.StartTimeout, StartConcurrency: opts.StartConcurrency, Dir: os.TempDir(),
		liteLog: opts.Log}
	if o.liteLog == nil {
		o.liteLog = io.Discard
	}
	if _, err := o.setDefaults(); err != nil {
		return nil, err
	}
	// envtest's ControlPlane would start an etcd of its own with each
	// apiserver, so the apiservers are started alone on this one.
	f := &LiteFleet{etcd: &envtest.Etcd{Path: filepath.Join(o.AssetsDir, "etcd"), StartTimeout: o.StartTimeout, Out: io.Discard, Err: io.Discard}}
	if err := f.etcd.Start(); err != nil {
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Stop()
		}
	}()
	f.Clusters = make([]*LiteCluster, len(opts.Clusters))
	f.apis = make([]*envtest.APIServer, len(opts.Clusters))
	knobs := DefaultLiteKnobs()
	if opts.Knobs != nil {
		knobs = *opts.Knobs
	}
	if opts.AuditDir != "" {
		if f.auditPolicy, err = writeAuditPolicy(opts.AuditDir); err != nil {
			return nil, err
		}
		f.auditDir, f.audited = opts.AuditDir, opts.Audited
	}
	if f.binary, err = knobs.binary(filepath.Join(o.AssetsDir, "kube-apiserver")); err != nil {
		return nil, err
	}
	err = startEach(opts.Clusters, o.StartConcurrency, func(i int, name string) error {
		// Each goroutine writes its own index. A failed attempt's
		// apiserver is stopped before the next one starts afresh.
		return retryStart(liteStartAttempts, o.StartTimeout, func(timeout time.Duration) error {
			api, c, err := f.startLite(name, i, f.binary, knobs, opts.CRDDirs, o, timeout)
			f.apis[i], f.Clusters[i] = api, c
			return err
		}, func() {
			if f.apis[i] != nil {
				_ = f.apis[i].Stop()
				f.apis[i] = nil
			}
		})
	})
	if err != nil {
		return nil, err // stopped by the deferred Stop
	}
	return f, nil
}

// startLite starts cluster i's apiserver on the shared etcd and installs
// the CRDs.
func (f *LiteFleet) startLite(name string, i int, path string, knobs LiteKnobs, crdDirs []string, o Options, timeout time.Duration) (*envtest.APIServer, *LiteCluster, error) {
	prefix := fmt.Sprintf("/lite/%d", i)
	api := &envtest.APIServer{Path: path, EtcdURL: f.etcd.URL,
		StartTimeout: timeout, StopTimeout: 30 * time.Second, Out: o.liteLog, Err: o.liteLog}
	if f.auditPolicy != "" && (len(f.audited) == 0 || slices.Contains(f.audited, name)) {
		api.Configure().Set("audit-policy-file", f.auditPolicy).
			Set("audit-log-path", AuditLog(f.auditDir, name)).Set("audit-log-format", "json")
	}
	api.Configure().
		Set("etcd-prefix", prefix).
		// No watch cache: each apiserver would otherwise keep every object
		// of its cluster in memory, the largest part of an idle one.
		Set("watch-cache", "false")
	for k, v := range knobs.Flags {
		api.Configure().Set(k, v)
	}
	if err := api.Start(); err != nil {
		return api, nil, fmt.Errorf("start apiserver: %w", err)
	}
	cfg, err := api.SecureServing.AddUser(envtest.User{Name: "sandbox-admin", Groups: []string{"system:masters"}}, &rest.Config{})
	if err != nil {
		return api, nil, err
	}
	// What envtest's AuthenticatedUser.Config adds: where and whom to trust.
	cfg.Host, cfg.CAData = api.SecureServing.URL("https", "/").String(), api.SecureServing.CA
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: crdDirs, ErrorIfPathMissing: true, MaxTime: CRDInstallWait}); err != nil {
		return api, nil, fmt.Errorf("install CRDs: %w", err)
	}
	c := &LiteCluster{Name: name, Config: cfg, PID: pidWithArg("--etcd-prefix=" + prefix)}
	if c.Kubeconfig, err = kubeconfigFor(c.Config, name, "sandbox-admin"); err != nil {
		return api, nil, err
	}
	if c.Clientset, err = kubernetes.NewForConfig(c.Config); err != nil {
		return api, nil, err
	}
	return api, c, nil
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

// Stop stops every apiserver, then the etcd.
func (f *LiteFleet) Stop() error {
	var errs []error
	for _, api := range f.apis {
		if api != nil {
			errs = append(errs, api.Stop())
		}
	}
	errs = append(errs, f.etcd.Stop())
	if dir := filepath.Dir(f.binary); strings.HasPrefix(filepath.Base(dir), liteScriptDir) {
		errs = append(errs, os.RemoveAll(dir))
	}
	return errors.Join(errs...)
}
