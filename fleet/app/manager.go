package app

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/etcdfleet/etcdfleet/config"
	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/dashboard"
	"github.com/etcdfleet/etcdfleet/fleet/limiter"
	"github.com/etcdfleet/etcdfleet/fleet/rotation"
	"github.com/etcdfleet/etcdfleet/fleet/settings"
	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdmember"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdsnapshot"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
	"github.com/etcdfleet/etcdfleet/memberctl/operator"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
)

// Fleet is the assembled manager.
type Fleet struct {
	Manager  mcmanager.Manager
	Provider *kubeconfigsecret.Provider
	Limiter  *limiter.Limiter
	// Snapshots paces snapshot starts; it shares nothing with Limiter, so
	// backups never delay a replacement.
	Snapshots *limiter.Slots
	// Rollouts is the fleet's wave of planned rolls: how many workload
	// clusters roll at once; the Limiter still paces each member restart.
	Rollouts  *limiter.Rollouts
	Dashboard *dashboard.Writer
	registry  *registry
	replica   string       // this replica's name (replicaID)
	sharding  *sharding    // nil unless sharding.enabled (shard.go)
	shares    *shareKeeper // likewise
}

// Scheme knows the reconcilers' kinds (operator.AddToScheme: the built-in
// ones and etcd.etcdfleet.io) and fleet.etcdfleet.io.
func Scheme() *runtime.Scheme {
	s := operator.Scheme()
	if err := fleetv1.AddToScheme(s); err != nil {
		panic(err) // only on a programming error in the scheme builders
	}
	return s
}

// skipNameValidation lets the package's tests run several managers in one
// process; controller-runtime refuses duplicate controller names per
// process (they would share metrics), which is right for the binary.
var skipNameValidation = false

// sharedScheme is the Scheme of every workload cluster; never add to it.
var sharedScheme = sync.OnceValue(operator.Scheme)

// New assembles the fleet manager for the management cluster at cfg.
func New(restCfg *rest.Config, c settings.Config) (*Fleet, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	f := &Fleet{}
	grants := make(chan event.TypedGenericEvent[gate.Request], 1024)
	f.Limiter = limiter.New(limiterOptions(c, func(r gate.Request) {
		select { // never block the limiter: the requeue-after is the fallback
		case grants <- event.TypedGenericEvent[gate.Request]{Object: r}:
		default:
		}
		f.notify(r.Cluster)
	}))
	slotGrants := make(chan event.TypedGenericEvent[gate.Request], 1024)
	f.Rollouts = limiter.NewRollouts(c.Rollout.Options())
	f.Snapshots = limiter.NewSlots(slotOptions(c, func(r gate.Request) {
		select { // never block the slots: the requeue-after is the fallback
		case slotGrants <- event.TypedGenericEvent[gate.Request]{Object: r}:
		default:
		}
	}))
	if err := f.newManager(restCfg, c); err != nil {
		return nil, err
	}
	if err := f.addParts(c, grants, slotGrants); err != nil {
		return nil, err
	}
	if err := f.Manager.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	return f, f.Manager.AddReadyzCheck("ping", healthz.Ping)
}

// notify tells the dashboard that cluster changed, once there is one.
func (f *Fleet) notify(cluster string) {
	if f.Dashboard != nil {
		f.Dashboard.Notify(cluster)
	}
}

// newManager builds the provider and the multicluster manager around it.
func (f *Fleet) newManager(restCfg *rest.Config, c settings.Config) error {
	sh, err := newSharding(restCfg, c)
	if err != nil {
		return err
	}
	f.sharding = sh
	po := providerOptions(c, f.onChange)
	id, err := replicaID(c)
	if err != nil {
		return err
	}
	f.replica = id
	po.UserAgent = func(purpose string) string { return UserAgent(purpose, id) }
	po.RecordedClaims = func(ctx context.Context, id string) ([]string, error) {
		return dashboard.RecordedClaims(ctx, f.Manager.GetLocalManager().GetClient(), c.Namespace, id)
	}
	if sh != nil {
		po.Ownership = sh.coord
	}
	claims, err := client.New(restCfg, client.Options{Scheme: Scheme()})
	if err != nil {
		return err
	}
	po.Claims = &claimStore{c: claims, ns: c.Namespace, sharded: sh != nil, now: time.Now,
		r: func() client.Reader { return f.Manager.GetLocalManager().GetClient() }}
	p, err := kubeconfigsecret.New(po)
	if err != nil {
		return err
	}
	f.Provider = p
	if sh != nil {
		sh.quiesce = p.Quiesce
	}
	mgr, err := mcmanager.New(restCfg, p, manager.Options{
		Scheme:                  Scheme(),
		Cache:                   cache.Options{ByObject: po.CacheByObject()},
		Metrics:                 metricsOptions(c),
		HealthProbeBindAddress:  c.HealthProbeBindAddress,
		LeaderElection:          c.LeaderElection,
		LeaderElectionID:        c.LeaderElectionID,
		LeaderElectionNamespace: c.Namespace,
		// Release the lease on shutdown so a standby takes over at once.
		LeaderElectionReleaseOnCancel: true,
		Controller:                    operator.ControllerConfig(ctrlconfig.Controller{SkipNameValidation: &skipNameValidation}),
	})
	if err != nil {
		return err
	}
	f.Manager = mgr
	return p.SetupWithManager(context.Background(), mgr)
}

// addParts adds the limiter, its metrics, the dashboard, the registry and
// the reconcilers to the manager.
func (f *Fleet) addParts(c settings.Config, grants, slotGrants <-chan event.TypedGenericEvent[gate.Request]) error {
	local := f.Manager.GetLocalManager()
	do := dashboardOptions(c)
	do.Recorder = local.GetEventRecorderFor("etcdfleet-dashboard")
	f.Dashboard = dashboard.New(local.GetClient(), f, f.Limiter, do)
	limiterRun := manager.Runnable(f.Limiter)
	if f.sharding != nil {
		if err := f.addSharded(); err != nil {
			return err
		}
		limiterRun = nil // added by addSharded, on every replica
	}
	for _, r := range []manager.Runnable{limiterRun, limiterMetrics{f.Limiter, f.Snapshots}} {
		if r == nil {
			continue
		}
		if err := local.Add(r); err != nil {
			return err
		}
	}
	if err := f.Dashboard.SetupWithManager(local); err != nil {
		return err
	}
	// Opted-in registrations renew their own tokens before expiry (the
	// leader mints, or sharded the cluster's owner; each registration and
	// cluster opts in apart).
	ro := rotation.Options{Namespace: c.Namespace, UserAgent: UserAgent(RotationPurpose, f.replica),
		Recorder: local.GetEventRecorderFor("etcdfleet-token-rotation"), SkipNameValidation: skipNameValidation}
	if f.sharding != nil {
		// The replica that owns the cluster rotates, so that no replica
		// reaches a cluster it does not own (see the package doc).
		ro.Owns = func(name string) bool { st, ok := f.Provider.State(name); return ok && st.Owned }
	}
	rot := rotation.New(local.GetClient(), ro)
	if err := rot.SetupWithManager(local); err != nil {
		return err
	}
	f.registry = &registry{log: ctrl.Log.WithName("fleet"), clusters: map[string]*entry{},
		newCluster: f.newCluster(c), onGone: func(name string) {
			f.Limiter.ForgetCluster(name)
			f.Snapshots.ForgetCluster(name)
			f.Rollouts.ForgetCluster(name)
		},
		known: func(name string) bool { _, ok := f.Provider.State(name); return ok }}
	if err := f.Manager.Add(f.registry); err != nil {
		return err
	}
	// The EtcdCluster reconciles run on every change of an EtcdCluster or
	// of its members (readiness, quorum, replacement counts), which is
	// exactly what the dashboard shows.
	o := OperatorOptions(c)
	o.Clusters, o.Wake, o.SnapshotWake, o.ClusterReconciled = f.registry, grants, slotGrants, f.Dashboard.Notify
	o.SkipNameValidation = skipNameValidation
	return operator.Setup(f.controllerManager(), o)
}

// OperatorOptions are the reconcilers' options of settings c, without
// the fleet's wiring (clusters, wake channels, dashboard): the options the
// e2e suites' single-cluster operator runs with too.
func OperatorOptions(c settings.Config) operator.Options {
	return operator.Options{Member: memberOptions(c), Snapshot: snapshotOptions(c), Workers: c.Workers,
		WorkersPerCluster: c.WorkersPerCluster, ReconcileTimeout: c.ReconcileTimeout}
}

// Start runs the fleet until ctx ends.
func (f *Fleet) Start(ctx context.Context) error { return f.Manager.Start(ctx) }

// newCluster builds the workload.Cluster of an engaged cluster.
func (f *Fleet) newCluster(c settings.Config) func(context.Context, string, cluster.Cluster) (*workload.Cluster, io.Closer, error) {
	return func(ctx context.Context, name string, cl cluster.Cluster) (*workload.Cluster, io.Closer, error) {
		cc := clusterConfig(name, cl, ctx)
		cc.Access, cc.Gate, cc.Slots, cc.Rollouts = operator.Access(c.EtcdAccess), f.Limiter, f.Snapshots, f.Rollouts
		cc.Paused = func() bool {
			st, ok := f.Provider.State(name)
			return (ok && st.Paused) || f.Dashboard.FleetPaused()
		}
		return operator.NewCluster(cc)
	}
}

func providerOptions(c settings.Config, onChange func(string)) kubeconfigsecret.Options {
	o := kubeconfigsecret.Options{
		Namespace: c.Namespace, Label: fleetv1.RegistrationLabel, Key: fleetv1.KubeconfigKey,
		PausedAnnotation: fleetv1.PausedAnnotation, NamespacesAnnotation: fleetv1.WatchNamespacesAnnotation,
		ClusterOptions: []cluster.Option{func(o *cluster.Options) {
			// One Scheme and one RESTMapper for all workload clusters:
			// both are read-only once built, and each would otherwise
			// cost a few hundred KiB per cluster.
			o.MapperProvider = func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return operator.RESTMapper(), nil }
			o.Cache.ByObject = operator.CacheByObject()
			o.Client.Cache = &client.CacheOptions{DisableFor: operator.UncachedObjects()}
			// Each API call of the reconcilers is bounded on its own, well
			// below the provider's 30 s RESTTimeout, which the cache's
			// watches do without (see fleet/app's doc: isolation of
			// clusters).
			o.NewClient = operator.NewClientWithTimeout(c.Clusters.RequestTimeout)
		}},
		Scheme:       sharedScheme(),
		WatchedKinds: operator.WatchedKinds(),
		AccessChecks: AccessChecks(operator.Access(c.EtcdAccess)),
		// The credentials must be constrained by the workload admission
		// policies, not only by RBAC, which can only say "may create Pods".
		Constraint:         constrained,
		AllowUnconstrained: c.AllowUnconstrained,
		ForbiddenChecks:    ForbiddenChecks(),
		// Rights are looked at with every probe, so that a revoked
		// permission shows within one probe interval: a rules review,
		// and the full check only when the rules changed.
		AccessRecheckInterval: c.Clusters.ProbeInterval,
		// One cluster, one registration: a second Secret for a cluster
		// already engaged is refused.
		// etcdfleetctl register records the identity it read; that Secret
		// owns its cluster over any other that reaches it.
		Identify: kubeconfigsecret.KubeSystemUID, IdentityAnnotation: fleetv1.ClusterIDAnnotation,
		OnChange: onChange,
		Prepare:  prepare(c),
		// A namespaced registration shows the namespaces it does not grant
		// that hold EtcdClusters, which nothing would reconcile.
		Unwatched: workload.UnwatchedNamespaces,
	}
	c.Clusters.Apply(&o) // qps, burst, preflight, probes
	return o
}

// AccessChecks are the permissions the reconcilers need with etcd access
// a (operator.AccessChecks), as the provider's pre-flight checks them, and
// get on the kube-system Namespace, which Identify (KubeSystemUID) reads:
// cluster-scoped, so asked cluster-wide even in namespaced mode, where the
// identity ClusterRole of config/rbac/workload grants it.
func AccessChecks(a operator.Access) []kubeconfigsecret.AccessCheck {
	var out []kubeconfigsecret.AccessCheck
	for _, c := range operator.AccessChecks(a) {
		out = append(out, kubeconfigsecret.AccessCheck{Group: c.Group, Resource: c.Resource,
			Subresource: c.Subresource, Verbs: c.Verbs})
	}
	return append(out, kubeconfigsecret.AccessCheck{Resource: "namespaces", Name: metav1.NamespaceSystem,
		ClusterScoped: true, Verbs: []string{"get"}})
}

// ForbiddenChecks are workload.Escalations as the provider asks them.
func ForbiddenChecks() []kubeconfigsecret.AccessCheck {
	var out []kubeconfigsecret.AccessCheck
	for _, e := range workload.Escalations() {
		out = append(out, kubeconfigsecret.AccessCheck{Group: e.Group, Resource: e.Resource, Subresource: e.Subresource,
			ClusterScoped: e.ClusterScoped, Verbs: e.Verbs})
	}
	return out
}

// constrained is workload.Constrained with a client of cfg.
func constrained(ctx context.Context, cfg *rest.Config, namespaces []string) (string, error) {
	// The shared static RESTMapper: no discovery at every check.
	cl, err := client.New(cfg, client.Options{Scheme: sharedScheme(), Mapper: operator.RESTMapper()})
	if err != nil {
		return "", err
	}
	return workload.Constrained(ctx, cl, namespaces)
}

// prepare installs the workload CRDs before a cluster is engaged, when
// configured to; otherwise there is nothing to prepare.
func prepare(c settings.Config) func(context.Context, *rest.Config) error {
	if !c.EnsureWorkloadCRDs {
		return nil
	}
	return func(ctx context.Context, cfg *rest.Config) error {
		cl, err := client.New(cfg, client.Options{})
		if err != nil {
			return err
		}
		return config.Apply(ctx, cl, "etcdfleet-manager", config.WorkloadCRDs())
	}
}

// The options of each part, from the settings: each part's config struct
// makes its own options (its Options or Apply), and the manager adds the
// wiring. Zero settings never reach here (Validate), and settings.Default
// is made of the parts' own defaults.

func limiterOptions(c settings.Config, onGrant func(gate.Request)) limiter.Options {
	// StartEmpty: a new leader must not spend a second burst (limiter doc).
	o := c.Limiter.Options()
	// OnReask wakes a member the same way as a grant does: it reconciles
	// and asks again.
	o.StartEmpty, o.OnGrant, o.OnReask, o.OnGranted = true, onGrant, onGrant, logGrant(ctrl.Log.WithName("limiter"))
	return o
}

// logGrant logs every destructive action the limiter lets go, with how
// long it waited for its token: the audit trail of what the fleet did and
// when, and how the fleet bench splits a heal into limiter wait and the
// rest. The limiter itself keeps the volume bounded (rate + burst a
// second), so it is an Info line.
func logGrant(log logr.Logger) func(limiter.Granted) {
	return func(g limiter.Granted) {
		r := g.Request
		log.Info("Destructive action granted", "cluster", r.Cluster, "namespace", r.Namespace, "etcdCluster", r.EtcdCluster,
			"member", r.Member, "action", r.Action, "quorumLost", r.QuorumLost, "restoring", g.Restoring,
			"waitedSeconds", g.Waited.Seconds())
	}
}

func slotOptions(c settings.Config, onGrant func(gate.Request)) limiter.SlotOptions {
	o := c.Snapshots.Options()
	o.OnGrant = onGrant
	return o
}

func dashboardOptions(c settings.Config) dashboard.Options {
	o := dashboard.Options{Sharded: c.Sharding.Enabled, ClusterKey: func(ci dashboard.ClusterInfo) string { return ci.Name }}
	c.Dashboard.Apply(&o)
	return o
}

func snapshotOptions(c settings.Config) etcdsnapshot.Options {
	o := etcdsnapshot.DefaultOptions()
	o.Image = c.AgentImage
	o.S3Limits = c.SnapshotAgent
	return o
}

func memberOptions(c settings.Config) etcdmember.Options {
	o := etcdmember.DefaultOptions()
	o.Policy = c.ReplacementPolicy()
	o.Pod.AgentImage = c.AgentImage
	return o
}

// Clusters implements dashboard.Source.
func (f *Fleet) Clusters() []dashboard.ClusterInfo {
	states := f.Provider.States()
	out := make([]dashboard.ClusterInfo, 0, len(states))
	for _, s := range states {
		out = append(out, f.ownerOf(clusterInfo(s), s.Owned))
	}
	return out
}

// Cluster implements dashboard.Source.
func (f *Fleet) Cluster(name string) (dashboard.ClusterInfo, bool) {
	s, ok := f.Provider.State(name)
	return f.ownerOf(clusterInfo(s), s.Owned), ok
}

func clusterInfo(s kubeconfigsecret.ClusterState) dashboard.ClusterInfo {
	missing := s.MissingRights
	if !s.Connected && s.Reason == kubeconfigsecret.ReasonForbidden {
		missing = s.Message // pre-flight refused the credentials
	}
	return dashboard.ClusterInfo{Name: s.Name, Namespace: s.Namespace, SecretUID: s.SecretUID,
		Connected: s.Connected, Reason: s.Reason, Message: s.Message, ServerVersion: s.ServerVersion,
		LastProbeTime: s.LastProbeTime, Paused: s.Paused,
		ClusterID: s.ClusterID, Duplicate: s.Reason == kubeconfigsecret.ReasonDuplicateCluster, MissingRights: missing,
		Unconstrained: s.Unconstrained, OverPrivileged: s.OverPrivileged, ConstraintKnown: s.ConstraintChecked,
		UnwatchedNamespaces: s.UnwatchedNamespaces,
		TokenIssuedAt:       s.Token.IssuedAt, TokenExpiresAt: s.Token.ExpiresAt}
}

// EtcdObjects implements dashboard.Source, from the cluster's cache.
func (f *Fleet) EtcdObjects(ctx context.Context, name string) ([]etcdv1.EtcdCluster, []etcdv1.EtcdMember, error) {
	cl, err := f.registry.Cluster(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	var ecs etcdv1.EtcdClusterList
	var ems etcdv1.EtcdMemberList
	if err := cl.Client.List(ctx, &ecs); err != nil {
		return nil, nil, fmt.Errorf("list etcd clusters: %w", err)
	}
	if err := cl.Client.List(ctx, &ems); err != nil {
		return nil, nil, fmt.Errorf("list etcd members: %w", err)
	}
	return ecs.Items, ems.Items, nil
}
