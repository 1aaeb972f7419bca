package kubeconfigsecret

import (
	"context"

	"errors"
	"fmt"
	"k8s.io/client-go/rest"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

const (
	// DefaultLabel marks a Secret as a workload cluster's kubeconfig; its
	// value must be exactly "true".
	DefaultLabel = "etcdfleet.io/cluster-kubeconfig"
	// DefaultKey is the Secret data key holding the kubeconfig.
	DefaultKey = "kubeconfig"
	// DefaultPausedAnnotation set to "true" on the Secret marks the cluster
	// paused in its ClusterState (the cluster stays engaged and watched).
	DefaultPausedAnnotation = "etcdfleet.io/paused"
)

// AccessCheck is one permission the workload-cluster credentials need,
// verified with SelfSubjectAccessReviews (cluster-wide) before engaging.
type AccessCheck struct {
	Group       string
	Resource    string
	Subresource string
	Verbs       []string
}

func (a AccessCheck) String() string {
	r := a.Resource
	if a.Group != "" {
		r += "." + a.Group
	}
	if a.Subresource != "" {
		r += "/" + a.Subresource
	}
	return strings.Join(a.Verbs, ",") + " " + r
}

// Options configure the Provider. Zero values take the defaults of
// withDefaults, the one place defaults live.
type Options struct {
	// Namespace holding the kubeconfig Secrets (required).
	Namespace string
	// Label selecting the Secrets (value "true"); default DefaultLabel.
	Label string
	// Key of the kubeconfig in the Secret's data; default DefaultKey.
	Key string
	// PausedAnnotation; default DefaultPausedAnnotation.
	PausedAnnotation string
	// ControllerName of the Secret controller on the local manager; default
	// "kubeconfigsecret-<Namespace>" (unique per provider).
	ControllerName string

	// QPS and Burst of each workload cluster's clients (default 50/100;
	// client-go's own 5/10 starve one cluster's reconciles).
	QPS   float32
	Burst int
	// RESTTimeout is rest.Config.Timeout of the workload clients (default
	// 30s). Without one, a server that accepts connections but never answers
	// hangs requests that ignore contexts (discovery, RESTMapper) forever.
	// It must not be short: client-go applies it to watch requests too, so
	// every watch is cut and re-opened at this interval (5s measured: a new
	// watch every ~5s per informer per cluster).
	RESTTimeout time.Duration
	// PreflightTimeout bounds the pre-flight (server version plus access
	// checks) of one connection attempt (default 10s).
	PreflightTimeout time.Duration
	// SyncTimeout bounds the initial sync of the WatchedKinds informers, and
	// separately mgr.Engage (default 30s).
	SyncTimeout time.Duration
	// ProbeInterval and ProbeTimeout of the per-cluster health probe
	// (defaults 10s and 5s).
	ProbeInterval time.Duration
	ProbeTimeout  time.Duration
	// FailureThreshold consecutive failed probes disengage a cluster
	// (default 5).
	FailureThreshold int
	// Backoff between connection attempts of one cluster (default 1s
	// doubling to 5m, 10% jitter). Steps 0 means unlimited.
	Backoff wait.Backoff

	// ClusterOptions are passed to cluster.New after a default that sets
	// Scheme to NewScheme(); narrow the workload caches here (for example
	// Cache.ByObject = operator.CacheByObject()).
	ClusterOptions []cluster.Option
	// WatchedKinds are the kinds whose informers are synced before Engage.
	// It MUST include every kind a multicluster controller watches: mcr's
	// Engage waits for the informers of the watched kinds under a lock shared
	// by all clusters, which is harmless only if they are already synced.
	// Default: DefaultWatchedKinds().
	WatchedKinds []client.Object
	// AccessChecks verified in pre-flight. Default: DefaultAccessChecks().
	AccessChecks []AccessCheck

	// Prepare, if set, runs before pre-flight with the cluster's config,
	// bounded by PreflightTimeout; an error is reported like a pre-flight
	// failure and retried. The manager uses it to install the workload CRDs
	// when asked to (--ensure-workload-crds).
	Prepare func(ctx context.Context, cfg *rest.Config) error

	// OnChange is called, in its own goroutine, whenever a cluster's state
	// changes (not for probe timestamps alone) or the cluster is removed.
	OnChange func(name string)
}

// DefaultWatchedKinds are the kinds the etcdfleet controllers watch on a
// workload cluster.
func DefaultWatchedKinds() []client.Object {
	return []client.Object{
		&v1alpha1.EtcdCluster{}, &v1alpha1.EtcdMember{},
		&corev1.Pod{}, &corev1.PersistentVolumeClaim{}, &corev1.Service{},
		&policyv1.PodDisruptionBudget{},
	}
}

// DefaultAccessChecks are the permissions the etcdfleet controllers need on
// a workload cluster: list/watch of every watched kind, and port-forward to
// reach etcd members through the API server (get: the WebSocket upgrade is
// a GET; see operator.Access.PortForwardVerb for the other modes).
func DefaultAccessChecks() []AccessCheck {
	lw := []string{"list", "watch"}
	return []AccessCheck{
		{Group: v1alpha1.GroupName, Resource: "etcdclusters", Verbs: lw},
		{Group: v1alpha1.GroupName, Resource: "etcdmembers", Verbs: lw},
		{Resource: "pods", Verbs: lw},
		{Resource: "persistentvolumeclaims", Verbs: lw},
		{Resource: "services", Verbs: lw},
		{Group: "policy", Resource: "poddisruptionbudgets", Verbs: lw},
		{Resource: "pods", Subresource: "portforward", Verbs: []string{"get"}},
	}
}

// NewScheme knows the built-in kinds and etcd.etcdfleet.io; it is the
// workload clusters' default scheme and suits the manager too.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

func (o Options) withDefaults() Options {
	if o.Label == "" {
		o.Label = DefaultLabel
	}
	if o.Key == "" {
		o.Key = DefaultKey
	}
	if o.PausedAnnotation == "" {
		o.PausedAnnotation = DefaultPausedAnnotation
	}
	if o.ControllerName == "" {
		o.ControllerName = "kubeconfigsecret-" + o.Namespace
	}
	if o.QPS == 0 {
		o.QPS = 50
	}
	if o.Burst == 0 {
		o.Burst = 100
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.RESTTimeout, 30*time.Second)
	def(&o.PreflightTimeout, 10*time.Second)
	def(&o.SyncTimeout, 30*time.Second)
	def(&o.ProbeInterval, 10*time.Second)
	def(&o.ProbeTimeout, 5*time.Second)
	if o.FailureThreshold == 0 {
		o.FailureThreshold = 5
	}
	if o.Backoff.Duration == 0 {
		o.Backoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Cap: 5 * time.Minute}
	}
	if o.Backoff.Steps == 0 {
		o.Backoff.Steps = math.MaxInt32
	}
	if o.WatchedKinds == nil {
		o.WatchedKinds = DefaultWatchedKinds()
	}
	if o.AccessChecks == nil {
		o.AccessChecks = DefaultAccessChecks()
	}
	scheme := func(co *cluster.Options) { co.Scheme = NewScheme() }
	o.ClusterOptions = append([]cluster.Option{scheme}, o.ClusterOptions...)
	return o
}

func (o Options) validate() error {
	var errs []error
	if o.Namespace == "" {
		errs = append(errs, errors.New("Namespace is required"))
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"RESTTimeout", o.RESTTimeout}, {"PreflightTimeout", o.PreflightTimeout}, {"SyncTimeout", o.SyncTimeout},
		{"ProbeInterval", o.ProbeInterval}, {"ProbeTimeout", o.ProbeTimeout}} {
		if d.d < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative", d.name))
		}
	}
	if o.FailureThreshold < 0 {
		errs = append(errs, errors.New("FailureThreshold must not be negative"))
	}
	return errors.Join(errs...)
}

// CacheByObject returns the manager cache entry that limits the Secret
// cache to the labelled Secrets of o.Namespace (never every Secret of the
// cluster). Merge it into mcmanager.Options.Cache.ByObject.
func (o Options) CacheByObject() map[client.Object]cache.ByObject {
	o = o.withDefaults()
	return map[client.Object]cache.ByObject{
		&corev1.Secret{}: {
			Namespaces: map[string]cache.Config{o.Namespace: {}},
			Label:      labels.SelectorFromSet(labels.Set{o.Label: "true"}),
		},
	}
}

// CacheByObject is Options{Namespace: namespace}.CacheByObject(), for the
// default label.
func CacheByObject(namespace string) map[client.Object]cache.ByObject {
	return Options{Namespace: namespace}.CacheByObject()
}
