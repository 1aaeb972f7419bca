package kubeconfigsecret

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

var _ multicluster.Provider = &Provider{}

// Provider engages one workload cluster per labelled kubeconfig Secret. See
// the package documentation.
type Provider struct {
	opts    Options
	watched []schema.GroupVersionKind // of opts.WatchedKinds, checked in pre-flight
	log     logr.Logger
	mgr     mcmanager.Manager
	reader  client.Reader // the local manager's (Secret-narrowed) cache
	// recorder records Events on the registration Secrets.
	recorder record.EventRecorder

	started chan struct{} // closed when the leader-elected runnable starts
	// connectSlots holds a token per connection attempt under way
	// (Options.MaxConcurrentConnects).
	connectSlots chan struct{}
	runCtx       context.Context
	wg           sync.WaitGroup

	mu     sync.Mutex
	conns  map[string]*conn         // by Secret name: one owner goroutine each
	states map[string]*ClusterState // by Secret name, same keys as conns
	active map[string]*session      // engaged clusters, for Get
	owners map[string]string        // Secret name by cluster identity (claim)
	// retired holds the gates of removed connections until nothing is in
	// flight through them, so that Quiesce still waits for those requests:
	// a Secret's removal ends the ownership, and the coordinator releases
	// the fence only after Quiesce.
	retired  map[string][]*quiesceGate
	indexers []index
}

type index struct {
	obj   client.Object
	field string
	fn    client.IndexerFunc
}

// secretSpec is what a connection needs from the Secret.
type secretSpec struct {
	uid     types.UID
	data    []byte
	hash    string
	invalid string // why data is unusable, if it is
	paused  bool
	// namespaces, when not empty, scope the cluster's caches and pre-flight
	// (Options.NamespacesAnnotation).
	namespaces []string
	token      TokenLifetime // from data's JWT claims, zero if none
}

// New returns a Provider; call SetupWithManager before starting the
// manager.
func New(opts Options) (*Provider, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("kubeconfigsecret: %w", err)
	}
	watched, err := watchedGVKs(opts)
	if err != nil {
		return nil, fmt.Errorf("kubeconfigsecret: %w", err)
	}
	return &Provider{
		opts:         opts,
		watched:      watched,
		log:          ctrl.Log.WithName("kubeconfigsecret"),
		started:      make(chan struct{}),
		connectSlots: make(chan struct{}, opts.MaxConcurrentConnects),
		conns:        map[string]*conn{},
		states:       map[string]*ClusterState{},
		active:       map[string]*session{},
		owners:       map[string]string{},
		retired:      map[string][]*quiesceGate{},
	}, nil
}

// SetupWithManager registers the Secret controller and the provider's
// runnable on mgr's local manager. Both need leader election (only the
// leader connects to workload clusters and engages them) unless
// Options.Ownership shards the clusters, whose runnable is added too.
func (p *Provider) SetupWithManager(_ context.Context, mgr mcmanager.Manager) error {
	if mgr == nil {
		return errors.New("kubeconfigsecret: nil manager")
	}
	if p.mgr != nil {
		return errors.New("kubeconfigsecret: SetupWithManager called twice")
	}
	local := mgr.GetLocalManager()
	p.mgr, p.reader = mgr, local.GetClient()
	// The core/v1 recorder: the management RBAC grants Events of that group.
	p.recorder = local.GetEventRecorderFor(p.opts.ControllerName) //nolint:staticcheck
	p.log = mgr.GetLogger().WithName("kubeconfigsecret").WithValues("secretNamespace", p.opts.Namespace)
	if err := local.Add(runner{p}); err != nil {
		return err
	}
	if o := p.opts.Ownership; o != nil {
		o.AddAware(ownershipAware{p})
		if r := o.Runnable(); r != nil {
			if err := local.Add(unelected{r}); err != nil {
				return err
			}
		}
	}
	ns := p.opts.Namespace
	// Only the namespace is filtered here, not the label: the update that
	// removes the label must reach reconcile, which then disengages (an
	// informer narrowed by CacheByObject delivers it as a delete anyway).
	return ctrl.NewControllerManagedBy(local).
		Named(p.opts.ControllerName).
		For(&corev1.Secret{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetNamespace() == ns
		}))).
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(p.opts.Ownership == nil)}).
		Complete(reconcile.Func(p.reconcile))
}

// runner gives the provider a context that lives as long as the manager
// (never a reconcile's context, which controller options may time out) and
// stops every cluster when the manager stops.
type runner struct{ p *Provider }

// NeedLeaderElection: without Options.Ownership only the leader connects;
// with it every replica connects to the clusters it owns.
func (r runner) NeedLeaderElection() bool { return r.p.opts.Ownership == nil }

// unelected runs a runnable on every replica, leader or not.
type unelected struct{ manager.Runnable }

func (unelected) NeedLeaderElection() bool { return false }

func (r runner) Start(ctx context.Context) error {
	p := r.p
	p.mu.Lock()
	p.runCtx = ctx
	close(p.started)
	p.mu.Unlock()
	<-ctx.Done()
	p.mu.Lock()
	for _, c := range p.conns {
		c.cancel()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

// reconcile makes the set of connections follow the Secrets: a Secret that
// is gone from the cache, unlabelled or being deleted disengages its
// cluster; any other one is handed to its connection owner.
func (p *Provider) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	select {
	case <-p.started:
	case <-ctx.Done():
		return reconcile.Result{}, ctx.Err()
	}
	sec := &corev1.Secret{}
	err := p.reader.Get(ctx, req.NamespacedName, sec)
	switch {
	case apierrors.IsNotFound(err):
		p.remove(req.Name, "the Secret is gone")
	case err != nil:
		return reconcile.Result{}, err
	case !p.selected(sec):
		p.remove(req.Name, "the Secret is no longer labelled or is being deleted")
	default:
		p.upsert(req.Name, p.specOf(sec))
	}
	return reconcile.Result{}, nil
}

func (p *Provider) selected(sec *corev1.Secret) bool {
	return sec.Namespace == p.opts.Namespace && sec.Labels[p.opts.Label] == "true" && sec.DeletionTimestamp == nil
}

func (p *Provider) specOf(sec *corev1.Secret) secretSpec {
	s := secretSpec{uid: sec.UID, paused: sec.Annotations[p.opts.PausedAnnotation] == "true"}
	data, ok := sec.Data[p.opts.Key]
	switch {
	case !ok:
		s.invalid = fmt.Sprintf("the Secret has no data key %q", p.opts.Key)
	case len(data) == 0:
		s.invalid = fmt.Sprintf("the Secret's data key %q is empty", p.opts.Key)
	default:
		s.data = data
		s.token, _ = tokenLifetimeOf(data)
	}
	if p.opts.NamespacesAnnotation != "" {
		s.namespaces = SplitNamespaces(sec.Annotations[p.opts.NamespacesAnnotation])
	}
	if s.data != nil {
		// The namespaces are part of what a connection is built from.
		s.hash = hashOf(append(append([]byte(nil), data...), []byte("\x00"+strings.Join(s.namespaces, ","))...))
	}
	return s
}

// registered reads the Secret name from the cache; ok is false if it is
// gone or no longer registered (reconcile removes the connection then).
func (p *Provider) registered(ctx context.Context, name string) (*corev1.Secret, bool) {
	sec := &corev1.Secret{}
	if err := p.reader.Get(ctx, types.NamespacedName{Namespace: p.opts.Namespace, Name: name}, sec); err != nil || !p.selected(sec) {
		return nil, false
	}
	return sec, true
}

// currentSpec is the registered Secret's spec.
func (p *Provider) currentSpec(ctx context.Context, name string) (secretSpec, bool) {
	sec, ok := p.registered(ctx, name)
	if !ok {
		return secretSpec{}, false
	}
	return p.specOf(sec), true
}

func (p *Provider) upsert(name string, spec secretSpec) {
	p.mu.Lock()
	c := p.conns[name]
	if c != nil {
		p.mu.Unlock()
		c.setSpec(spec)
		return
	}
	if p.runCtx.Err() != nil { // stopping: Start is waiting for the owners
		p.mu.Unlock()
		return
	}
	c = newConn(p, name, spec)
	p.conns[name] = c
	p.states[name] = &ClusterState{Name: name, Namespace: p.opts.Namespace,
		Reason: ReasonConnecting, Message: "connecting", Owned: p.opts.Ownership == nil}
	p.states[name].fromSpec(spec)
	setClusterCounts(p.opts.Namespace, p.states)
	p.wg.Add(1)
	p.mu.Unlock()
	c.log.Info("Cluster registered")
	p.notify(name)
	go func() {
		defer p.wg.Done()
		c.run()
	}()
	c.claim()
}

// remove disengages a cluster: its contexts are cancelled before this
// returns, which stops its cache and every watch controllers put on it.
func (p *Provider) remove(name, why string) {
	p.mu.Lock()
	c := p.conns[name]
	if c == nil {
		p.mu.Unlock()
		return
	}
	delete(p.conns, name)
	delete(p.states, name)
	if s := p.active[name]; s != nil && s.conn == c {
		delete(p.active, name)
	}
	released := p.release(name, "")
	setClusterCounts(p.opts.Namespace, p.states)
	p.retireLocked(name, c.retire())
	p.mu.Unlock()
	c.cancel()
	forgetRights(p.opts.Namespace, name)
	c.log.Info("Cluster removed", "why", why)
	p.notify(name)
	// With exclusive claims a duplicate may be waiting for another
	// replica's Secret, whose removal it sees only here.
	if released || p.opts.Claims != nil {
		p.retryDuplicates()
	}
}

// update applies fn to c's state if c still owns the name, and reports a
// change (other than the probe time) to metrics and OnChange.
func (p *Provider) update(c *conn, fn func(*ClusterState)) {
	p.mu.Lock()
	st := p.states[c.name]
	if p.conns[c.name] != c || st == nil {
		p.mu.Unlock()
		return
	}
	before := *st
	fn(st)
	after := *st
	before.LastProbeTime = after.LastProbeTime
	changed := before != after
	if changed {
		setClusterCounts(p.opts.Namespace, p.states)
	}
	p.mu.Unlock()
	if changed {
		p.notify(c.name)
	}
}

func (p *Provider) notify(name string) {
	if f := p.opts.OnChange; f != nil {
		go f(name)
	}
}

// setActive makes s visible to Get; it returns the indexes added since s's
// cluster was created, which the caller applies.
func (p *Provider) setActive(s *session) ([]index, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns[s.conn.name] != s.conn {
		return nil, false
	}
	p.active[s.conn.name] = s
	return append([]index(nil), p.indexers[s.indexed:]...), true
}

func (p *Provider) clearActive(s *session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.active[s.conn.name] == s {
		delete(p.active, s.conn.name)
	}
}

func (p *Provider) snapshotIndexers() []index {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]index(nil), p.indexers...)
}

// Get returns an engaged cluster, or multicluster.ErrClusterNotFound.
func (p *Provider) Get(_ context.Context, name multicluster.ClusterName) (cluster.Cluster, error) {
	p.mu.Lock()
	s := p.active[string(name)]
	p.mu.Unlock()
	if s == nil || s.ctx.Err() != nil {
		return nil, fmt.Errorf("cluster %q: %w", name, multicluster.ErrClusterNotFound)
	}
	return s.cl, nil
}

// Context returns the engagement context of an engaged cluster. It is
// cancelled when the cluster is disengaged for any reason; reconcilers
// should bind their work on that cluster to it.
func (p *Provider) Context(name string) (context.Context, bool) {
	p.mu.Lock()
	s := p.active[name]
	p.mu.Unlock()
	if s == nil || s.ctx.Err() != nil {
		return nil, false
	}
	return s.ctx, true
}

// IndexField indexes a field on every engaged cluster and on every cluster
// engaged later.
func (p *Provider) IndexField(ctx context.Context, obj client.Object, field string, fn client.IndexerFunc) error {
	p.mu.Lock()
	p.indexers = append(p.indexers, index{obj: obj, field: field, fn: fn})
	sessions := make([]*session, 0, len(p.active))
	for _, s := range p.active {
		sessions = append(sessions, s)
	}
	p.mu.Unlock()
	var errs []error
	for _, s := range sessions {
		if err := s.cl.GetFieldIndexer().IndexField(ctx, obj, field, fn); err != nil {
			errs = append(errs, fmt.Errorf("cluster %q: index %q: %w", s.conn.name, field, err))
		}
	}
	return errors.Join(errs...)
}

// States returns the state of every registered Secret's cluster, by name.
func (p *Provider) States() []ClusterState {
	p.mu.Lock()
	out := make([]ClusterState, 0, len(p.states))
	for _, s := range p.states {
		out = append(out, *s)
	}
	p.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// State returns one cluster's state.
func (p *Provider) State(name string) (ClusterState, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.states[name]; s != nil {
		return *s, true
	}
	return ClusterState{}, false
}

// watchedGVKs resolves WatchedKinds with the Scheme the clusters get from
// ClusterOptions, so that pre-flight can ask discovery for exactly those.
func watchedGVKs(o Options) ([]schema.GroupVersionKind, error) {
	var co cluster.Options
	for _, f := range o.ClusterOptions {
		f(&co)
	}
	out := make([]schema.GroupVersionKind, 0, len(o.WatchedKinds))
	for _, obj := range o.WatchedKinds {
		gvk, err := apiutil.GVKForObject(obj, co.Scheme)
		if err != nil {
			return nil, fmt.Errorf("watched kind %T: %w", obj, err)
		}
		out = append(out, gvk)
	}
	return out, nil
}

// SplitNamespaces parses the value of Options.NamespacesAnnotation: a
// comma-separated list, without blanks and duplicates, sorted.
func SplitNamespaces(v string) []string {
	var out []string
	for _, ns := range strings.Split(v, ",") {
		if ns = strings.TrimSpace(ns); ns != "" && !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return out
}
