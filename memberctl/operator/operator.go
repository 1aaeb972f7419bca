package operator

import (
	"context"
	"fmt"
	"io"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdaccess"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdbackup"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdcluster"
	"github.com/etcdfleet/etcdfleet/memberctl/etcddefrag"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdmember"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdsnapshot"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// Access is how the operator reaches etcd members.
type Access string

const (
	// PortForward dials members through pods/portforward on the cluster's
	// kube-apiserver with WebSockets, one per member connection: works from
	// outside the cluster (the default).
	PortForward Access = "port-forward"
	// PortForwardSPDY is PortForward over SPDY, one shared connection per
	// Pod, for a path to the apiserver that passes SPDY but not WebSocket
	// upgrades. Each SPDY connection holds about 0.8 MiB of header
	// compression state, which is why it is not the default.
	PortForwardSPDY Access = "port-forward-spdy"
	// Direct dials the Pod IP: needs the operator in the Pod network.
	Direct Access = "direct"
)

// PortForwardVerb is the verb on pods/portforward that reaching members
// with a needs: a WebSocket upgrade is a GET, a SPDY one a POST. Direct
// needs none and gets "".
func (a Access) PortForwardVerb() string {
	switch a {
	case PortForward, "":
		return "get"
	case PortForwardSPDY:
		return "create"
	}
	return ""
}

// ClusterConfig describes one workload cluster to NewCluster.
type ClusterConfig struct {
	Name   string
	REST   *rest.Config
	Client client.Client
	Reader client.Reader
	// Recorder records the cluster's Events; nil gets a lean recorder of
	// NewCluster's own (see eventRecorder), closed with the cluster.
	Recorder record.EventRecorder
	Access   Access
	Gate     gate.Gate
	// Slots pace snapshot starts; nil is gate.AllowAllSlots.
	Slots   gate.Slots
	Paused  func() bool
	Context context.Context
}

// NewCluster builds the handle for one workload cluster. The returned
// Closer releases its etcd clients, port-forward connections and, if
// NewCluster made it, its event recorder.
func NewCluster(cfg ClusterConfig) (*workload.Cluster, io.Closer, error) {
	var dialer etcdaccess.PodDialer
	var closer io.Closer = nopCloser{}
	switch cfg.Access {
	case PortForward, "":
		ws, err := etcdaccess.NewWebSocketDialer(cfg.REST, etcdaccess.WebSocketOptions{})
		if err != nil {
			return nil, nil, err
		}
		dialer, closer = ws, ws
	case PortForwardSPDY:
		pf, err := etcdaccess.NewPortForwardDialer(cfg.REST, etcdaccess.PortForwardOptions{})
		if err != nil {
			return nil, nil, err
		}
		dialer, closer = pf, pf
	case Direct:
		dialer = etcdaccess.NewDirectDialer(func(ctx context.Context, ns, name string) (string, error) {
			p := &corev1.Pod{}
			if err := cfg.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, p); err != nil {
				return "", err
			}
			return p.Status.PodIP, nil
		})
	default:
		return nil, nil, fmt.Errorf("unknown etcd access %q (want %q, %q or %q)", cfg.Access, PortForward, PortForwardSPDY, Direct)
	}
	rec, recCloser, err := eventRecorder(cfg)
	if err != nil {
		_ = closer.Close()
		return nil, nil, err
	}
	g := cfg.Gate
	if g == nil {
		g = gate.AllowAll{}
	}
	slots := cfg.Slots
	if slots == nil {
		slots = gate.AllowAllSlots{}
	}
	// The etcd client logs every retry at warn; failures reach us as errors
	// and end up in conditions and Events, so its own logging stays off.
	pool := etcdaccess.NewClientPool(dialer, zap.NewNop())
	cl := &workload.Cluster{Name: cfg.Name, Client: cfg.Client, Reader: cfg.Reader, Recorder: rec,
		Etcd: &etcd.Ops{Pool: pool}, Gate: g, Slots: slots, Paused: cfg.Paused, Context: cfg.Context}
	return cl, closers{pool, closer, recCloser}, nil
}

// Options configure SetupWithManager.
type Options struct {
	Access Access
	Gate   gate.Gate
	// Slots pace snapshot starts; nil is gate.AllowAllSlots.
	Slots  gate.Slots
	Member etcdmember.Options
	// Snapshot tunes the EtcdSnapshot reconciler; zero is
	// etcdsnapshot.DefaultOptions.
	Snapshot etcdsnapshot.Options
	// Backup tunes the spec.backup reconciler; zero is
	// etcdbackup.DefaultOptions.
	Backup etcdbackup.Options
	// MaxConcurrentReconciles per controller (default 4).
	MaxConcurrentReconciles int
}

// ManagerOptions returns o with what a single-cluster manager needs for
// SetupWithManager: the Scheme, the narrowed caches and the uncached kinds,
// all derived from workload.Kinds.
func ManagerOptions(o ctrl.Options) ctrl.Options {
	o.Scheme = Scheme()
	o.Cache.ByObject = CacheByObject()
	o.Client.Cache = &client.CacheOptions{DisableFor: UncachedObjects()}
	return o
}

// SetupWithManager runs the reconcilers for mgr's single cluster, whose
// options came from ManagerOptions.
func SetupWithManager(mgr ctrl.Manager, opts Options) (io.Closer, error) {
	if opts.MaxConcurrentReconciles == 0 {
		opts.MaxConcurrentReconciles = 4
	}
	if opts.Member.Policy.Cap == 0 {
		opts.Member = etcdmember.DefaultOptions()
	}
	cl, closer, err := NewCluster(ClusterConfig{
		REST: mgr.GetConfig(), Client: mgr.GetClient(), Reader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorderFor("etcdfleet"), Access: opts.Access, Gate: opts.Gate, Slots: opts.Slots,
	})
	if err != nil {
		return nil, err
	}
	src := workload.Static{C: cl}
	copts := controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}
	if err := etcdmember.SetupWithManager(mgr, &etcdmember.Reconciler{Clusters: src, Options: opts.Member}, copts); err != nil {
		return nil, err
	}
	if err := etcdcluster.SetupWithManager(mgr, &etcdcluster.Reconciler{Clusters: src, Policy: opts.Member.Policy}, copts); err != nil {
		return nil, err
	}
	if err := etcddefrag.SetupWithManager(mgr, src, etcddefrag.DefaultOptions(), copts); err != nil {
		return nil, err
	}
	if opts.Snapshot.Image == "" {
		opts.Snapshot = etcdsnapshot.DefaultOptions()
	}
	if err := etcdsnapshot.SetupWithManager(mgr, &etcdsnapshot.Reconciler{Clusters: src, Options: opts.Snapshot}, copts); err != nil {
		return nil, err
	}
	if opts.Backup.Grace == 0 {
		opts.Backup = etcdbackup.DefaultOptions()
	}
	if err := etcdbackup.SetupWithManager(mgr, &etcdbackup.Reconciler{Clusters: src, Options: opts.Backup}, copts); err != nil {
		return nil, err
	}
	return closer, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

type closers []io.Closer

func (cs closers) Close() error {
	var first error
	for _, c := range cs {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
