package kubeconfigsecret

import (
	"context"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
)

// Event reasons the provider records on a registration Secret.
const (
	// EventMissingRights (Warning): an engaged cluster's credentials lost
	// permissions of AccessChecks.
	EventMissingRights = "MissingRights"
	// EventRightsRestored (Normal): they have every permission again.
	EventRightsRestored = "RightsRestored"
	// EventDuplicateCluster (Warning): the Secret was refused as a duplicate.
	EventDuplicateCluster = ReasonDuplicateCluster
	// EventIdentityMismatch (Warning): the Secret's kubeconfig reaches
	// another cluster than the one its annotation says it registers.
	EventIdentityMismatch = ReasonIdentityMismatch
)

// forbiddenSpacing is the least time between two access checks set off by
// 403 responses: a cluster whose rights are gone answers every request of
// every informer and reconcile 403, and one check tells all there is; the
// periodic check catches anything a skipped signal would have.
const forbiddenSpacing = time.Second

// rightsWatch re-checks an engaged cluster's AccessChecks.
type rightsWatch struct {
	// cfg is the credentials' config without the 403 notifier, for the
	// constraint checks: their dry-runs are meant to be refused.
	cfg   *rest.Config
	ssar  authorizationv1client.SelfSubjectAccessReviewInterface
	rules authorizationv1client.SelfSubjectRulesReviewInterface
	// namespaces scope the checks as the cluster's caches are scoped
	// (Options.NamespacesAnnotation); none: cluster-wide.
	namespaces []string
	// forbidden receives a signal when a request of the cluster's clients
	// is answered 403; it never blocks the request.
	forbidden chan struct{}
	// Only supervise's goroutine uses these.
	last     time.Time // of the last look (rules review or full check)
	lastFull time.Time // of the last full check that got an answer
	rulesSum string    // the rules' fingerprint taken before that check; "": none
	missing  string    // as last reported
}

// newRightsWatch returns the watch and the config the cluster's clients
// (cache, reconcilers) are built from: cfg with a transport wrapper that
// signals every 403. The access reviews themselves use an unwrapped copy.
func newRightsWatch(cfg *rest.Config, namespaces []string, ua string) (*rightsWatch, *rest.Config, error) {
	acfg := rest.CopyConfig(cfg)
	acfg.UserAgent = ua
	ac, err := authorizationv1client.NewForConfig(acfg)
	if err != nil {
		return nil, nil, err
	}
	w := &rightsWatch{cfg: acfg, ssar: ac.SelfSubjectAccessReviews(), rules: ac.SelfSubjectRulesReviews(), namespaces: namespaces, forbidden: make(chan struct{}, 1)}
	wrapped := rest.CopyConfig(cfg)
	wrapped.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &forbiddenNotifier{rt: rt, signal: w.forbidden} })
	return w, wrapped, nil
}

// forbiddenNotifier passes requests through and signals 403 responses.
type forbiddenNotifier struct {
	rt     http.RoundTripper
	signal chan<- struct{}
}

func (f *forbiddenNotifier) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := f.rt.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusForbidden {
		select {
		case f.signal <- struct{}{}:
		default: // a check is pending already
		}
	}
	return resp, err
}

// checkRights looks at an engaged cluster's rights and reports what is
// missing, or that nothing is any more. Unless forced (a 403 was seen) or
// AccessSweepInterval has passed since the last full check, it first asks
// for the credentials' rules (rulesFingerprint) and stops there when they
// are what they were at the last full check: one request per namespace
// instead of one per permission and verb. Otherwise it asks every
// AccessCheck again (CheckAccess). An error (the cluster does not answer)
// changes nothing: the probe deals with it. The calls are bounded by
// ProbeTimeout, like a probe.
// It reports whether it ran the full check.
func (c *conn) checkRights(actx context.Context, s *session, force bool) bool {
	w := s.rights
	now := time.Now()
	w.last = now
	ctx, cancel := context.WithTimeout(actx, c.p.opts.ProbeTimeout)
	defer cancel()
	sum := w.rulesFingerprint(ctx)
	if !force && sum != "" && sum == w.rulesSum && now.Sub(w.lastFull) < c.p.opts.AccessSweepInterval {
		return false
	}
	denied, err := CheckAccess(ctx, w.ssar, c.p.opts.AccessChecks, w.namespaces)
	if err != nil {
		c.log.V(1).Info("Access check failed", "error", s.red.redact(err.Error()))
		return false
	}
	w.lastFull, w.rulesSum = now, sum
	missing := strings.Join(denied, "; ")
	setRightsMissing(c.p.opts.Namespace, c.name, len(denied))
	if missing == w.missing {
		return true
	}
	w.missing = missing
	c.p.update(c, func(st *ClusterState) { st.MissingRights = missing })
	if missing != "" {
		c.log.Info("The credentials lack permissions; the cluster stays engaged", "missing", missing)
		c.p.event(c.name, corev1.EventTypeWarning, EventMissingRights,
			"the credentials lack permissions the controllers need: "+missing)
		return true
	}
	c.log.Info("The credentials have every permission again")
	c.p.event(c.name, corev1.EventTypeNormal, EventRightsRestored, "the credentials have every permission the controllers need again")
	return true
}

// recheckConstraint runs checkConstraint for an engaged cluster, bounded
// by ProbeTimeout like a probe. Its Constraint runs at every look at the
// rights, since admission policies change without any change to the
// credentials' rules; its ForbiddenChecks only with a full access check
// (full), since RBAC rights change only with the rules.
func (c *conn) recheckConstraint(actx context.Context, s *session, full bool) string {
	ctx, cancel := context.WithTimeout(actx, c.p.opts.ProbeTimeout)
	defer cancel()
	problem, err := c.checkConstraint(ctx, s.rights, full)
	if err != nil {
		c.log.V(1).Info("Constraint check got no answer", "error", s.red.redact(err.Error()))
	}
	return problem
}

// forbiddenDue reports whether a 403 signal should start a check now.
func (w *rightsWatch) forbiddenDue(now time.Time) bool {
	return now.Sub(w.last) >= forbiddenSpacing
}

// event records an Event on the named registration Secret, if the provider
// has a recorder (it has once SetupWithManager ran).
func (p *Provider) event(name, typ, reason, msg string) {
	if p.recorder == nil {
		return
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: p.opts.Namespace, Name: name}}
	p.mu.Lock()
	if st := p.states[name]; st != nil {
		sec.UID = st.SecretUID
	}
	p.mu.Unlock()
	p.recorder.Event(sec, typ, reason, msg)
}
