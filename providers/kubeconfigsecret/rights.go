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
)

// forbiddenSpacing is the least time between two access checks set off by
// 403 responses: a cluster whose rights are gone answers every request of
// every informer and reconcile 403, and one check tells all there is; the
// periodic check catches anything a skipped signal would have.
const forbiddenSpacing = time.Second

// rightsWatch re-checks an engaged cluster's AccessChecks.
type rightsWatch struct {
	ssar authorizationv1client.SelfSubjectAccessReviewInterface
	// namespaces scope the checks as the cluster's caches are scoped
	// (Options.NamespacesAnnotation); none: cluster-wide.
	namespaces []string
	// forbidden receives a signal when a request of the cluster's clients
	// is answered 403; it never blocks the request.
	forbidden chan struct{}
	last      time.Time // of the last check; only supervise's goroutine uses it
	missing   string    // as last reported
}

// newRightsWatch returns the watch and the config the cluster's clients
// (cache, reconcilers) are built from: cfg with a transport wrapper that
// signals every 403. The access reviews themselves use an unwrapped copy.
func newRightsWatch(cfg *rest.Config, namespaces []string) (*rightsWatch, *rest.Config, error) {
	ac, err := authorizationv1client.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return nil, nil, err
	}
	w := &rightsWatch{ssar: ac.SelfSubjectAccessReviews(), namespaces: namespaces, forbidden: make(chan struct{}, 1)}
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

// checkRights asks the AccessChecks again for an engaged cluster and
// reports what is missing, or that nothing is any more. An error (the
// cluster does not answer) changes nothing: the probe deals with it. The
// reviews run concurrently and are bounded by ProbeTimeout, like a probe.
func (c *conn) checkRights(actx context.Context, s *session) {
	w := s.rights
	w.last = time.Now()
	ctx, cancel := context.WithTimeout(actx, c.p.opts.ProbeTimeout)
	defer cancel()
	denied, err := CheckAccess(ctx, w.ssar, c.p.opts.AccessChecks, w.namespaces)
	if err != nil {
		c.log.V(1).Info("Access check failed", "error", s.red.redact(err.Error()))
		return
	}
	missing := strings.Join(denied, "; ")
	setRightsMissing(c.p.opts.Namespace, c.name, len(denied))
	if missing == w.missing {
		return
	}
	w.missing = missing
	c.p.update(c, func(st *ClusterState) { st.MissingRights = missing })
	if missing != "" {
		c.log.Info("The credentials lack permissions; the cluster stays engaged", "missing", missing)
		c.p.event(c.name, corev1.EventTypeWarning, EventMissingRights,
			"the credentials lack permissions the controllers need: "+missing)
		return
	}
	c.log.Info("The credentials have every permission again")
	c.p.event(c.name, corev1.EventTypeNormal, EventRightsRestored, "the credentials have every permission the controllers need again")
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
