package kubeconfigsecret

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// conn owns one cluster's lifecycle in its own goroutine (run): connect,
// engage, probe, disengage, retry. Nothing it does blocks another cluster.
type conn struct {
	p      *Provider
	name   string
	log    logr.Logger
	ctx    context.Context // cancelled when the Secret goes away or the manager stops
	cancel context.CancelFunc

	mu            sync.Mutex
	spec          secretSpec
	attemptHash   string
	attemptCancel context.CancelFunc // cancels the current attempt when the kubeconfig changes
	lastHash      string
	// ownCtx is the context of this replica's ownership of the cluster
	// (Options.Ownership); owned wakes run when a new one arrives.
	ownCtx context.Context
	owned  chan struct{}
	// constraint is what the last constraint check found; only run's
	// goroutine uses it.
	constraint constraintState
	// held is the identity whose exclusive claim (Options.Claims) this
	// process took for the Secret, "" when none.
	held string
	// gate admits the current attempt's requests (Provider.Quiesce).
	gate     *quiesceGate
	gateStop func() bool
	// quiescedOwn is the ownership (the context waitOwned returns) that
	// Quiesce ended: an attempt begun under it gets a closed gate, and run
	// starts none until a new ownership arrives. The coordinator releases
	// the fence right after Quiesce and ends the ownership concurrently,
	// so a retry in between would otherwise open a new gate and send its
	// pre-flight to a cluster whose fence another replica may hold.
	quiescedOwn context.Context
	// retired: the Secret was removed (Provider.remove); an attempt begun
	// after that gets a closed gate.
	retired bool
}

// session is one engagement of a cluster; ctx is its engagement context.
type session struct {
	conn    *conn
	cl      cluster.Cluster
	ctx     context.Context
	cancel  context.CancelFunc
	probe   rest.Interface
	red     redactor
	version string
	indexed int          // indexers applied at creation
	rights  *rightsWatch // re-checks the AccessChecks while engaged
	budget  *budget      // what the cluster may make the manager hold
}

type outcome int

const (
	stopped      outcome = iota // the Secret is gone or the manager stops
	changed                     // the kubeconfig changed: reconnect now
	disowned                    // another replica owns it now: wait to own it again
	unauthorized                // 401: reconnect now with the Secret's current contents
	disconnected                // probes failed, or the credentials are no longer constrained: reconnect after backoff
	outranked                   // another Secret owns the cluster now (recorded claims): reconnect now, to be refused
)

// newConn is called with p.mu held.
func newConn(p *Provider, name string, spec secretSpec) *conn {
	ctx, cancel := context.WithCancelCause(p.runCtx)
	log := p.log.WithValues("cluster", name)
	return &conn{p: p, name: name, log: log, ctx: logr.NewContext(ctx, log), spec: spec,
		cancel: func() { cancel(removedError{name}) }, owned: make(chan struct{}, 1)}
}

// setSpec hands the Secret's latest contents to the owner; a different
// kubeconfig cancels whatever the owner is doing (connecting, waiting out a
// backoff, or running an engaged cluster) so that it starts over with it.
// The state says so before the engagement context is cancelled: Connected
// is never true for a cancelled engagement.
func (c *conn) setSpec(s secretSpec) {
	c.mu.Lock()
	c.spec = s
	var interrupt context.CancelFunc
	if c.attemptCancel != nil && s.hash != c.attemptHash {
		interrupt = c.attemptCancel
	}
	c.mu.Unlock()
	c.p.update(c, func(st *ClusterState) {
		st.fromSpec(s)
		if interrupt != nil {
			st.Connected, st.Reason, st.Message = false, ReasonConnecting, "the kubeconfig changed; reconnecting"
			st.ConsecutiveFailures = 0
		}
	})
	if interrupt != nil {
		interrupt()
	}
}

// begin starts an attempt with the Secret's current contents; the attempt
// also ends with the ownership own.
func (c *conn) begin(own context.Context) (secretSpec, context.Context, context.CancelFunc) {
	cur, ok := c.p.currentSpec(c.ctx, c.name)
	c.mu.Lock()
	if ok {
		c.spec = cur
	}
	spec := c.spec
	ctx, cancelAttempt := context.WithCancel(c.ctx)
	stop := context.AfterFunc(own, cancelAttempt)
	cancel := func() { stop(); cancelAttempt() }
	c.attemptHash, c.attemptCancel = spec.hash, cancel
	// Nothing is sent once the ownership ended, even by a reconcile or an
	// Event already under way; Quiesce closes the gate earlier if asked.
	// The previous attempt's gate closes: its session is over.
	if c.gate != nil {
		c.gateStop()
		c.gate.close()
	}
	c.gate = newQuiesceGate()
	c.gateStop = context.AfterFunc(own, c.gate.close)
	if own == c.quiescedOwn || c.retired {
		c.gate.close()
	}
	fresh := spec.hash != c.lastHash && spec.invalid == ""
	c.lastHash = spec.hash
	c.mu.Unlock()
	c.p.update(c, func(st *ClusterState) {
		st.fromSpec(spec)
		st.Owned = true
		switch {
		case st.Reason == ReasonNotOwned:
			st.Connected, st.Reason, st.Message = false, ReasonConnecting, "connecting"
			st.ConsecutiveFailures = 0
		case fresh && st.Reason != ReasonConnecting:
			st.Connected, st.Reason, st.Message = false, ReasonConnecting, "connecting with a new kubeconfig"
			st.ConsecutiveFailures = 0
		}
	})
	return spec, ctx, cancel
}

// interrupted tells why an attempt context ended.
func (c *conn) interrupted() outcome {
	if c.ctx.Err() != nil {
		return stopped
	}
	c.mu.Lock()
	own := c.ownCtx
	c.mu.Unlock()
	if own != nil && own.Err() != nil {
		return disowned
	}
	return changed
}

func (c *conn) run() {
	defer c.cancel()
	// The Secret is gone or the manager stops, and nothing of the
	// cluster runs any more here: its claim goes.
	defer c.releaseHeld()
	b := c.p.opts.Backoff
	var delay time.Duration
	for {
		own, ok := c.waitOwned()
		if !ok {
			return
		}
		if c.quiesced(own) {
			// Nothing more under this ownership; its end is on the way.
			select {
			case <-own.Done():
			case <-c.ctx.Done():
			}
			continue
		}
		spec, actx, acancel := c.begin(own)
		if !c.waitToConnect(actx, delay) {
			acancel()
			if c.settle(c.interrupted()) == stopped {
				return
			}
			b, delay = c.p.opts.Backoff, 0
			continue
		}
		start := time.Now()
		s, f := c.connect(actx, spec)
		<-c.p.connectSlots
		if f != nil {
			interrupted := actx.Err() != nil
			acancel()
			if interrupted {
				if c.settle(c.interrupted()) == stopped {
					return
				}
				b, delay = c.p.opts.Backoff, 0
				continue
			}
			delay = b.Step()
			c.log.Info("Connection attempt failed", "reason", f.reason, "message", f.msg, "retryIn", delay)
			c.p.update(c, func(st *ClusterState) {
				st.Connected, st.Reason = false, f.reason
				st.Message = fmt.Sprintf("%s; retrying in %s", f.msg, delay.Round(10*time.Millisecond))
				st.ConsecutiveFailures++
			})
			continue
		}
		engageDuration.WithLabelValues(c.p.opts.Namespace).Observe(time.Since(start).Seconds())
		c.log.Info("Cluster engaged", "serverVersion", s.version, "took", time.Since(start).Round(time.Millisecond))
		b, delay = c.p.opts.Backoff, 0
		out := c.supervise(actx, s)
		c.p.clearActive(s)
		s.cancel()
		acancel()
		switch c.settle(out) {
		case stopped:
			c.log.Info("Cluster disengaged")
			return
		case changed, unauthorized, outranked:
			c.log.Info("Cluster disengaged; reconnecting now", "why",
				map[outcome]string{changed: "kubeconfig changed", unauthorized: "unauthorized", outranked: "another Secret owns the cluster"}[out])
		case disowned:
			b, delay = c.p.opts.Backoff, 0
			c.log.Info("Cluster disengaged: this replica no longer owns it")
		case disconnected:
			delay = b.Step()
			c.log.Info("Cluster disengaged: disconnected", "retryIn", delay)
			c.p.update(c, func(st *ClusterState) {
				st.Message += fmt.Sprintf("; retrying in %s", delay.Round(10*time.Millisecond))
			})
		}
	}
}

// waitToConnect waits out delay, then for a connection slot
// (Options.MaxConcurrentConnects), which the caller gives back once its
// attempt has ended. It returns false, holding no slot, when actx ends
// first.
func (c *conn) waitToConnect(actx context.Context, delay time.Duration) bool {
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-actx.Done():
			return false
		}
	}
	select {
	case c.p.connectSlots <- struct{}{}:
		return true
	default:
	}
	c.log.V(1).Info("Waiting for a connection slot", "maxConcurrentConnects", cap(c.p.connectSlots))
	select {
	case c.p.connectSlots <- struct{}{}:
		return true
	case <-actx.Done():
		return false
	}
}

// settle does with the exclusive claim what out calls for, once the
// attempt or engagement has ended, and returns out: another replica owns
// the Secret now and keeps its claim; after an engagement that ended for
// any other reason the claim is released, and taken again by the next
// pre-flight if the Secret still ranks first (a Secret that outranks it
// may take it meanwhile, which is the point). stopped is left to run's
// deferred release.
func (c *conn) settle(out outcome) outcome {
	switch out {
	case disowned:
		c.forgetHeld()
	case changed, unauthorized, disconnected, outranked:
		c.releaseHeld()
	}
	return out
}

// connect runs pre-flight, builds and starts the cluster, syncs the watched
// informers and engages it. Every step is bounded by a timeout.
func (c *conn) connect(actx context.Context, spec secretSpec) (*session, *failure) {
	bud := newBudget(c.p.opts.MaxResponseBytes, c.p.opts.MaxObjects)
	s, f := c.connectWithin(actx, spec, bud)
	if f != nil && bud.reason() != "" {
		return nil, bud.failure() // whatever step failed, this is why
	}
	return s, f
}

// connectWithin is connect, with every client of the cluster built from a
// config whose responses bud caps.
func (c *conn) connectWithin(actx context.Context, spec secretSpec, bud *budget) (*session, *failure) {
	o := c.p.opts
	if spec.invalid != "" {
		return nil, &failure{reason: ReasonInvalidSecret, msg: spec.invalid}
	}
	cfg, red, err := parseKubeconfig(spec.data)
	if err != nil {
		return nil, classify(err, "kubeconfig", red)
	}
	// Timeout bounds the calls that ignore contexts (discovery, RESTMapper)
	// against a server that accepts connections but never answers. The
	// cache's watches do without it (cacheHTTPClient).
	cfg.QPS, cfg.Burst, cfg.Timeout = o.QPS, o.Burst, o.RESTTimeout
	cfg.UserAgent = o.UserAgent(PurposeControllers)
	cfg.Wrap(bud.wrap) // before any copy: every client of the cluster is capped
	c.mu.Lock()
	cfg.Wrap(c.gate.wrap) // and stops at Quiesce or the ownership's end
	c.mu.Unlock()
	if o.Prepare != nil {
		pctx, cancel := context.WithTimeout(actx, o.PreflightTimeout)
		err := o.Prepare(pctx, cfg)
		cancel()
		if err != nil {
			return nil, classify(err, "prepare", red)
		}
	}
	rights, ccfg, err := newRightsWatch(cfg, spec.namespaces, o.UserAgent(PurposeAccessReview))
	if err != nil {
		return nil, classify(err, "access check client", red)
	}
	version, f := c.preflight(actx, cfg, red, rights)
	if f != nil {
		return nil, f
	}
	if f := c.claimIdentity(actx, cfg, red); f != nil {
		return nil, f
	}
	c.checkUnwatched(actx, cfg, spec.namespaces)
	cacheHC, err := cacheHTTPClient(ccfg)
	if err != nil {
		return nil, classify(err, "cache client", red)
	}
	cl, err := cluster.New(ccfg, append(clusterOptions(o.ClusterOptions, spec.namespaces), withCacheHTTPClient(cacheHC))...)
	if err != nil {
		return nil, classify(err, "create cluster", red)
	}
	indexers := c.p.snapshotIndexers()
	for _, ix := range indexers {
		if err := cl.GetFieldIndexer().IndexField(actx, ix.obj, ix.field, ix.fn); err != nil {
			return nil, classify(err, fmt.Sprintf("index field %q", ix.field), red)
		}
	}
	probe, err := probeClient(cfg, o.ProbeTimeout, o.UserAgent(PurposeProbe))
	if err != nil {
		return nil, classify(err, "probe client", red)
	}
	sctx, scancel := context.WithCancel(actx)
	startErr := make(chan error, 1)
	go func() {
		err := cl.Start(sctx)
		if err != nil && sctx.Err() == nil {
			c.log.Error(fmt.Errorf("%s", red.redact(err.Error())), "Cluster stopped")
		}
		startErr <- err
		scancel()
	}()
	s := &session{conn: c, cl: cl, ctx: sctx, cancel: scancel, probe: probe, red: red, version: version,
		indexed: len(indexers), rights: rights, budget: bud}
	if f := c.syncInformers(s, startErr); f != nil {
		scancel()
		return nil, f
	}
	late, ok := c.p.setActive(s)
	if !ok {
		scancel()
		return nil, &failure{reason: ReasonError, msg: "the Secret was removed"}
	}
	for _, ix := range late {
		if err := cl.GetFieldIndexer().IndexField(sctx, ix.obj, ix.field, ix.fn); err != nil {
			c.p.clearActive(s)
			scancel()
			return nil, classify(err, fmt.Sprintf("index field %q", ix.field), red)
		}
	}
	if f := c.engage(s); f != nil {
		c.p.clearActive(s)
		scancel()
		return nil, f
	}
	c.p.update(c, func(st *ClusterState) {
		st.Connected, st.Reason, st.Message = true, ReasonConnected, "engaged"
		st.ServerVersion, st.LastProbeTime, st.ConsecutiveFailures = version, time.Now(), 0
		st.MissingRights = "" // pre-flight found every permission
	})
	setRightsMissing(o.Namespace, c.name, 0)
	return s, nil
}

// engage calls mgr.Engage with the engagement context. The informers of
// the watched kinds are synced, so mcr's sources register at once; should a
// controller watch another kind, its informer syncs under a lock shared by
// every cluster (mcr §5.1), so the call is bounded by SyncTimeout and the
// cluster is cancelled if it takes longer (which also unblocks the sources).
func (c *conn) engage(s *session) *failure {
	done := make(chan error, 1)
	go func() { done <- c.p.mgr.Engage(s.ctx, multicluster.ClusterName(c.name), s.cl) }()
	t := time.NewTimer(c.p.opts.SyncTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil {
			return &failure{reason: ReasonEngageFailed, msg: "engage: " + s.red.redact(err.Error())}
		}
		return nil
	case <-t.C:
		s.cancel()
		return &failure{reason: ReasonEngageFailed, msg: fmt.Sprintf(
			"engage did not return within %s; does a controller watch a kind missing from Options.WatchedKinds?", c.p.opts.SyncTimeout)}
	case <-s.ctx.Done():
		return &failure{reason: ReasonEngageFailed, msg: "engage: the cluster stopped"}
	}
}

// clusterOptions appends to opts, for a namespaced registration, the
// option that scopes every cache of the cluster to namespaces: its
// credentials may list and watch nowhere else.
func clusterOptions(opts []cluster.Option, namespaces []string) []cluster.Option {
	if len(namespaces) == 0 {
		return opts
	}
	scoped := func(co *cluster.Options) {
		co.Cache.DefaultNamespaces = map[string]crcache.Config{}
		for _, ns := range namespaces {
			co.Cache.DefaultNamespaces[ns] = crcache.Config{}
		}
	}
	return append(slices.Clone(opts), scoped)
}
