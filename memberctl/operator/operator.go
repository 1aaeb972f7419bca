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
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdaccess"
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
	Slots gate.Slots
	// Rollouts pace planned rolls across the fleet; nil is
	// gate.AllowAllRollouts.
	Rollouts gate.Rollouts
	Paused   func() bool
	Context  context.Context
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
	rollouts := cfg.Rollouts
	if rollouts == nil {
		rollouts = gate.AllowAllRollouts{}
	}
	// The etcd client logs every retry at warn; failures reach us as errors
	// and end up in conditions and Events, so its own logging stays off.
	pool := etcdaccess.NewClientPool(dialer, zap.NewNop())
	cl := &workload.Cluster{Name: cfg.Name, Client: cfg.Client, Reader: cfg.Reader, Recorder: rec,
		Etcd: &etcd.Ops{Pool: pool}, Gate: g, Slots: slots, Rollouts: rollouts, Paused: cfg.Paused, Context: cfg.Context}
	return cl, closers{pool, closer, recCloser}, nil
}

// ManagerOptions returns o with what a manager of the operator needs: the
// Scheme, the narrowed caches and the uncached kinds, all derived from
// workload.Kinds, and ControllerConfig. The fleet sets the same per
// engaged cluster through its provider.
func ManagerOptions(o ctrl.Options) ctrl.Options {
	o.Scheme = Scheme()
	o.Cache.ByObject = CacheByObject()
	o.Client.Cache = &client.CacheOptions{DisableFor: UncachedObjects()}
	o.Controller = ControllerConfig(o.Controller)
	return o
}

// ControllerConfig returns c with the classic workqueue instead of
// controller-runtime's priority queue, the default since v0.23. The
// priority queue of the pinned v0.24.1 can deadlock on shutdown
// (kubernetes-sigs/controller-runtime#3538, fixed by #3540 in later
// releases): a worker parked in Get returns on shutdown without taking
// the item handed to it, so the hand-off blocks holding the queue's lock,
// the last worker's Done waits on that lock, and the manager gives up
// after its 30 s graceful shutdown with an error (seen in the pacing e2e
// under load). No etcdfleet controller sets priorities; what is lost is
// only that the initial list's events rank below live ones. Drop this with
// a controller-runtime that has the fix.
func ControllerConfig(c config.Controller) config.Controller {
	c.UsePriorityQueue = classicQueue()
	return c
}

// classicQueue is the UsePriorityQueue of every etcdfleet controller, set
// both manager-wide (ControllerConfig) and per multicluster controller
// (controllerOptions), which the manager-wide value does not reach.
func classicQueue() *bool { return ptr.To(false) }

// NewLocalCluster is the workload.Cluster of mgr's local cluster, for a
// single-cluster operator: a manager without a provider, on which Setup's
// controllers engage the local cluster (named ""). Its Gate and Slots
// allow everything; the Closer releases its etcd clients.
func NewLocalCluster(mgr mcmanager.Manager, access Access) (*workload.Cluster, io.Closer, error) {
	local := mgr.GetLocalManager()
	return NewCluster(ClusterConfig{REST: local.GetConfig(), Client: local.GetClient(), Reader: local.GetAPIReader(),
		Recorder: local.GetEventRecorderFor("etcdfleet"), Access: access})
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
