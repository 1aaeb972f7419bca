package kubeconfigsecret

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
)

// Defaults of Options. withDefaults is the only place they are applied;
// they are exported so that a configuration layer can show them.
const (
	// DefaultQPS and DefaultBurst of each workload cluster's clients:
	// client-go's own 5/10 starve one cluster's reconciles.
	DefaultQPS   = 50
	DefaultBurst = 100
	// DefaultRESTTimeout: see Options.RESTTimeout.
	DefaultRESTTimeout      = 30 * time.Second
	DefaultPreflightTimeout = 10 * time.Second
	DefaultSyncTimeout      = 30 * time.Second
	DefaultProbeInterval    = 10 * time.Second
	DefaultProbeTimeout     = 5 * time.Second
	DefaultFailureThreshold = 5
	// DefaultAccessRecheckInterval: see Options.AccessRecheckInterval.
	DefaultAccessRecheckInterval = time.Minute
	// DefaultAccessSweepInterval: see Options.AccessSweepInterval.
	DefaultAccessSweepInterval = 10 * time.Minute
	// DefaultMaxConcurrentConnects: see Options.MaxConcurrentConnects. A
	// connection attempt sends a cluster about 60 access reviews, discovery
	// and a list per watched kind, and holds their responses until the
	// caches have synced. 16 at once engage a hundred healthy clusters in a
	// few waves of about a second each, while a manager that starts with a
	// thousand registered never sends 70,000 requests in one burst, nor
	// holds the memory of a thousand initial lists at once.
	DefaultMaxConcurrentConnects = 16
)

// AccessCheck is one permission the workload-cluster credentials need,
// verified with SelfSubjectAccessReviews before engaging: cluster-wide, or
// in each watched namespace of a namespaced registration
// (NamespacesAnnotation) unless ClusterScoped.
type AccessCheck struct {
	Group       string
	Resource    string
	Subresource string
	// Name, if set, checks the one object of that name only
	// (ResourceAttributes.Name), as an RBAC rule with resourceNames grants
	// it: e.g. get on the kube-system Namespace, which Identify reads.
	Name string
	// ClusterScoped checks are asked cluster-wide even for a namespaced
	// registration: they concern cluster-scoped objects (a Namespace),
	// which RoleBindings in the watched namespaces cannot grant, so the
	// credentials need them from a ClusterRoleBinding in both modes.
	ClusterScoped bool
	Verbs         []string
}

func (a AccessCheck) String() string {
	r := a.Resource
	if a.Group != "" {
		r += "." + a.Group
	}
	if a.Subresource != "" {
		r += "/" + a.Subresource
	}
	if a.Name != "" {
		r += " named " + a.Name
	}
	return strings.Join(a.Verbs, ",") + " " + r
}

// Options configure the Provider. Zero values take the defaults of
// withDefaults, the one place defaults live.
type Options struct {
	// Namespace holding the kubeconfig Secrets (required).
	Namespace string
	// Label selecting the Secrets; its value must be exactly "true"
	// (required).
	Label string
	// Key of the kubeconfig in the Secret's data (required).
	Key string
	// PausedAnnotation set to "true" on a Secret marks its cluster paused
	// in its ClusterState (the cluster stays engaged and watched). Empty:
	// no cluster is ever marked paused.
	PausedAnnotation string
	// NamespacesAnnotation, when set, names an annotation of the Secret
	// listing namespaces, comma-separated: that cluster's caches then watch
	// only those namespaces (cache.Options.DefaultNamespaces), and
	// pre-flight checks AccessChecks in each of them instead of
	// cluster-wide (but the ClusterScoped ones), for credentials granted by
	// RoleBindings there. A
	// Secret without the annotation is watched cluster-wide. Changing the
	// annotation reconnects the cluster, like a new kubeconfig.
	NamespacesAnnotation string
	// ControllerName of the Secret controller on the local manager; default
	// "kubeconfigsecret-<Namespace>" (unique per provider).
	ControllerName string

	// QPS and Burst of each workload cluster's clients (DefaultQPS,
	// DefaultBurst).
	QPS   float32
	Burst int
	// RESTTimeout is rest.Config.Timeout of the workload clients (default
	// 30s). Without one, a server that accepts connections but never answers
	// hangs requests that ignore contexts (discovery, RESTMapper) forever.
	// The cluster's cache does without it: client-go applies it to watches
	// too, and would cut every informer's watch at this interval. Its
	// lists and watches end with the engagement instead.
	RESTTimeout time.Duration
	// PreflightTimeout bounds the pre-flight (server version plus access
	// checks) of one connection attempt (default 10s).
	PreflightTimeout time.Duration
	// MaxResponseBytes caps each response body of a workload apiserver
	// (default DefaultMaxResponseBytes). A response past it fails, and the
	// cluster is disengaged with ReasonOverBudget; a watch stream past it
	// only ends, and is resumed. One cluster cannot fill the manager's
	// memory with one answer.
	MaxResponseBytes int64
	// MaxConcurrentConnects bounds the connection attempts (pre-flight,
	// cache sync, engage) that run at once across every cluster of the
	// provider (default DefaultMaxConcurrentConnects); the others wait for
	// a slot, in no set order, with ClusterState Reason Connecting. An
	// engaged cluster holds no slot, and every step of an attempt has its
	// timeout (PreflightTimeout, SyncTimeout), so a cluster that never
	// answers gives its slot back within them.
	MaxConcurrentConnects int
	// MaxObjects caps the objects a cluster's caches hold (default
	// DefaultMaxObjects); past it the cluster is disengaged with
	// ReasonOverBudget, which drops its caches.
	MaxObjects int64
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

	// Scheme of the workload clusters; it must know every WatchedKinds
	// kind. Default: client-go's scheme of the built-in kinds.
	Scheme *runtime.Scheme
	// ClusterOptions are passed to cluster.New after one that sets Scheme;
	// narrow the workload caches here (Cache.ByObject).
	ClusterOptions []cluster.Option
	// WatchedKinds are the kinds whose informers are synced before Engage,
	// and whose serving pre-flight checks. It MUST include every kind a
	// multicluster controller watches: mcr's Engage waits for the informers
	// of the watched kinds under a lock shared by all clusters, which is
	// harmless only if they are already synced.
	WatchedKinds []client.Object
	// AccessChecks verified in pre-flight, typically list and watch of every
	// WatchedKinds kind and whatever else the controllers need (their
	// writes too). An engaged cluster's credentials are checked again every
	// AccessRecheckInterval, and at once when a request of its clients is
	// answered 403 Forbidden; what is missing shows in
	// ClusterState.MissingRights, a metric and a Warning Event on the
	// Secret.
	AccessChecks []AccessCheck
	// Constraint, if set, is asked at pre-flight, after the access checks,
	// and at every look at an engaged cluster's rights
	// (AccessRecheckInterval), whether admission in the cluster constrains
	// the credentials as expected. A cluster whose credentials it finds
	// unconstrained is refused, or disengaged, with ReasonUnconstrained
	// (a Warning Event, a metric), unless AllowUnconstrained. It is asked
	// at every look, not only when the rules change: admission policies
	// change without any change to the credentials' rules.
	Constraint ConstraintFunc
	// AllowUnconstrained engages a cluster that Constraint finds
	// unconstrained anyway; ClusterState.Unconstrained, the log, the
	// metric and the Event still say so.
	AllowUnconstrained bool
	// ForbiddenChecks are permissions the credentials must NOT have
	// (escalation paths no controller needs), asked with
	// SelfSubjectAccessReviews alongside Constraint. Those granted show in
	// ClusterState.OverPrivileged, the metric and a Warning Event; the
	// cluster stays engaged.
	ForbiddenChecks []AccessCheck
	// AccessRecheckInterval between two looks at an engaged cluster's
	// rights (default 1m). A look is one SelfSubjectRulesReview per
	// namespace of the registration (one for a cluster-wide one); only when
	// the rules differ from those of the last full check, or the review is
	// incomplete (an authorizer other than RBAC cannot list its rules), is
	// every AccessCheck asked again: one SelfSubjectAccessReview per
	// permission and verb. All are answered by the workload apiserver's
	// authorizer from memory.
	AccessRecheckInterval time.Duration
	// AccessSweepInterval is the longest time between two full checks of
	// an engaged cluster's AccessChecks, whatever the rules reviews say
	// (default 10m): a backstop for what a rules review cannot show.
	AccessSweepInterval time.Duration
	// Identify, if set, returns the identity of the cluster a kubeconfig
	// reaches (KubeSystemUID is one), read in pre-flight. A Secret whose
	// cluster has the identity of another registered Secret's is refused
	// with ReasonDuplicateCluster while that one is registered. Nil: no
	// duplicate detection.
	Identify func(ctx context.Context, cfg *rest.Config) (string, error)
	// IdentityAnnotation, if set with Identify, is the Secret annotation in
	// which the tool that wrote the Secret recorded the identity it
	// registered. A Secret whose annotation names another identity than
	// Identify reads is refused (ReasonIdentityMismatch); among Secrets
	// reaching one cluster, one whose annotation names it owns the cluster.
	IdentityAnnotation string
	// RecordedClaims, if set with Identify, returns the Secrets that any
	// replica or earlier process recorded as reaching identity id (the
	// fleet records ClusterState.ClusterID on each FleetCluster). Claims
	// are then decided by rules every replica applies alike: the vouched
	// Secret (IdentityAnnotation), else the oldest. An error fails the
	// pre-flight, which is retried. Nil: what this process has seen.
	RecordedClaims func(ctx context.Context, id string) ([]string, error)
	// Claims, if set with Identify, makes the claims exclusive across
	// replicas (ClaimStore): a Secret that ranks first engages only once it
	// holds its identity's claim, and is refused with
	// ReasonDuplicateCluster while another Secret holds it. Without it, two
	// Secrets for one cluster that two replicas connect before either
	// recorded its claim both engage until the next rights re-check.
	Claims ClaimStore

	// Unwatched, if set, returns for a namespaced registration the other
	// namespaces of the cluster that hold objects the controllers would
	// manage (cfg is the cluster's, namespaces the granted ones). Asked
	// after pre-flight and at every full rights check; the answer is
	// ClusterState.UnwatchedNamespaces, with a Warning Event when new ones
	// appear. An error (Forbidden: the credential may not look) reports
	// nothing and fails nothing.
	Unwatched func(ctx context.Context, cfg *rest.Config, namespaces []string) ([]string, error)

	// UserAgent names each request to a workload cluster by its purpose
	// (PurposeControllers, PurposePreflight, PurposeProbe,
	// PurposeAccessReview), so that the cluster's audit log tells who sent
	// it and why; Prepare, Identify, Constraint and Unwatched get configs
	// named PurposeControllers. A caller running several replicas puts the
	// replica's name in it, so that the audit log says which replica
	// reached the cluster. Default DefaultUserAgent.
	UserAgent func(purpose string) string

	// Prepare, if set, runs before pre-flight with the cluster's config,
	// bounded by PreflightTimeout; an error is reported like a pre-flight
	// failure and retried. The manager uses it to install the workload CRDs
	// when asked to (--ensure-workload-crds).
	Prepare func(ctx context.Context, cfg *rest.Config) error

	// OnChange is called, in its own goroutine, whenever a cluster's state
	// changes (not for probe timestamps alone) or the cluster is removed.
	OnChange func(name string)

	// Ownership, if set, shards the registered clusters among replicas:
	// the provider connects to a cluster (pre-flight, cache, probes, engage)
	// only while Ownership has engaged it here, and disengages it when that
	// engagement ends. Every registered cluster is handed to
	// Ownership.Engage with a nil cluster.Cluster, so a coordinator that
	// calls its awares only for the clusters it owns (multicluster-runtime's
	// sharded coordinator) decides before anything is connected. The Secret
	// controller, the provider's runnable and Ownership.Runnable then run on
	// every replica, without leader election. Nil: every registered cluster
	// is connected, by the leader.
	Ownership mcmanager.Coordinator
}

func (o Options) withDefaults() Options {
	if o.ControllerName == "" {
		o.ControllerName = "kubeconfigsecret-" + o.Namespace
	}
	if o.QPS == 0 {
		o.QPS = DefaultQPS
	}
	if o.Burst == 0 {
		o.Burst = DefaultBurst
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.RESTTimeout, DefaultRESTTimeout)
	def(&o.PreflightTimeout, DefaultPreflightTimeout)
	def(&o.SyncTimeout, DefaultSyncTimeout)
	def(&o.ProbeInterval, DefaultProbeInterval)
	def(&o.ProbeTimeout, DefaultProbeTimeout)
	def(&o.AccessRecheckInterval, DefaultAccessRecheckInterval)
	def(&o.AccessSweepInterval, DefaultAccessSweepInterval)
	if o.FailureThreshold == 0 {
		o.FailureThreshold = DefaultFailureThreshold
	}
	if o.MaxResponseBytes == 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.MaxObjects == 0 {
		o.MaxObjects = DefaultMaxObjects
	}
	if o.MaxConcurrentConnects == 0 {
		o.MaxConcurrentConnects = DefaultMaxConcurrentConnects
	}
	if o.Backoff.Duration == 0 {
		o.Backoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Cap: 5 * time.Minute}
	}
	if o.Backoff.Steps == 0 {
		o.Backoff.Steps = math.MaxInt32
	}
	if o.UserAgent == nil {
		o.UserAgent = DefaultUserAgent
	}
	if o.Scheme == nil {
		o.Scheme = clientgoscheme.Scheme
	}
	scheme := func(co *cluster.Options) { co.Scheme = o.Scheme }
	o.ClusterOptions = append([]cluster.Option{scheme}, o.ClusterOptions...)
	return o
}

func (o Options) validate() error {
	var errs []error
	if o.Namespace == "" {
		errs = append(errs, errors.New("Namespace is required"))
	}
	if o.Label == "" {
		errs = append(errs, errors.New("Label is required"))
	}
	if o.Key == "" {
		errs = append(errs, errors.New("Key is required"))
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"RESTTimeout", o.RESTTimeout}, {"PreflightTimeout", o.PreflightTimeout}, {"SyncTimeout", o.SyncTimeout},
		{"ProbeInterval", o.ProbeInterval}, {"ProbeTimeout", o.ProbeTimeout}, {"AccessRecheckInterval", o.AccessRecheckInterval},
		{"AccessSweepInterval", o.AccessSweepInterval}} {
		if d.d < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative", d.name))
		}
	}
	if o.FailureThreshold < 0 {
		errs = append(errs, errors.New("FailureThreshold must not be negative"))
	}
	if o.MaxResponseBytes < 0 || o.MaxObjects < 0 || o.MaxConcurrentConnects < 0 {
		errs = append(errs, errors.New("MaxResponseBytes, MaxObjects and MaxConcurrentConnects must not be negative"))
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
