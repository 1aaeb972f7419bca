package rotation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
)

// Annotations of a registration Secret, written by etcdfleetctl register.
const (
	// EnabledAnnotation "true" opts the registration in: register writes
	// it with --allow-token-rotation, after granting the workload side.
	EnabledAnnotation = "fleet.etcdfleet.io/token-rotation"
	// RotateBeforeAnnotation, a Go duration, rotates the token once less
	// than that is left (Policy.Window); absent: a third of its lifetime.
	RotateBeforeAnnotation = "fleet.etcdfleet.io/token-rotate-before"
)

// DefaultTimeout bounds one rotation's calls to the workload apiserver.
const DefaultTimeout = 30 * time.Second

// Options configure the Rotator.
type Options struct {
	// Namespace of the registration Secrets (required).
	Namespace string
	// Recorder records TokenRotated and TokenRotationFailed Events on the
	// FleetClusters; nil records none.
	Recorder record.EventRecorder
	// Now is the clock (default time.Now); tests move it.
	Now func() time.Time
	// Timeout of the workload calls (default DefaultTimeout).
	Timeout time.Duration
	// Policy decides when a token is due; a registration's
	// RotateBeforeAnnotation overrides its Window.
	Policy Policy
	// SkipNameValidation lets tests run several managers in one process.
	SkipNameValidation bool
	// UserAgent of the workload calls (default DefaultUserAgent); the
	// fleet puts its replica's name in it.
	UserAgent string
	// Owns, if set, tells whether this replica runs the registration's
	// workload cluster (sharding): the Rotator then runs on every replica,
	// not on the leader only, and acts on a registration only where Owns
	// is true, so a replica reaches only the clusters it owns. Elsewhere
	// it looks again every OwnerRecheck, in case the cluster moved here.
	Owns func(name string) bool
	// OwnerRecheck (default DefaultOwnerRecheck): see Owns.
	OwnerRecheck time.Duration
}

// DefaultOwnerRecheck is how often a replica that does not own an
// opted-in registration looks again: ownership moves within seconds, and
// a rotation is due hours ahead.
const DefaultOwnerRecheck = 10 * time.Second

// DefaultUserAgent names the rotation's workload calls by default.
const DefaultUserAgent = "etcdfleet-manager/token-rotation"

func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	if o.OwnerRecheck == 0 {
		o.OwnerRecheck = DefaultOwnerRecheck
	}
	return o
}

// Rotator rotates the tokens of opted-in registrations before they expire.
type Rotator struct {
	c    client.Client
	opts Options
}

// New returns a Rotator that reads and writes registration Secrets and
// FleetCluster status through c (the management cluster's).
func New(c client.Client, o Options) *Rotator { return &Rotator{c: c, opts: o.withDefaults()} }

// SetupWithManager runs the Rotator on mgr, the management cluster's
// manager, for the labelled Secrets of the namespace (its cache holds no
// other Secret). It runs on the leader only, so a token is minted once;
// with Options.Owns on every replica, each for the registrations it owns.
func (r *Rotator) SetupWithManager(mgr ctrl.Manager) error {
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == r.opts.Namespace && o.GetLabels()[fleetv1.RegistrationLabel] == "true"
	})
	// A FleetCluster created after its Secret (the dashboard creates it)
	// gets its condition at once, not at the next due date.
	created := predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return e.Object.GetNamespace() == r.opts.Namespace },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	return ctrl.NewControllerManagedBy(mgr).Named("token-rotation").
		WithOptions(controller.Options{SkipNameValidation: &r.opts.SkipNameValidation,
			NeedLeaderElection: ptr.To(r.opts.Owns == nil)}).
		For(&corev1.Secret{}, builder.WithPredicates(ours)).
		Watches(&fleetv1.FleetCluster{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(created)).
		Complete(r)
}

// Reconcile looks at one registration: not opted in, nothing; not due,
// look again when due; due, rotate.
func (r *Rotator) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var s corev1.Secret
	if err := r.c.Get(ctx, req.NamespacedName, &s); err != nil {
		if apierrors.IsNotFound(err) {
			forget(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if s.Annotations[EnabledAnnotation] != "true" || s.DeletionTimestamp != nil {
		forget(req.Name)
		return ctrl.Result{}, r.clearCondition(ctx, req)
	}
	if r.opts.Owns != nil && !r.opts.Owns(req.Name) {
		// Another replica runs the cluster, and rotates its token.
		return ctrl.Result{RequeueAfter: r.opts.OwnerRecheck}, nil
	}
	policy := r.opts.Policy
	if v, ok := s.Annotations[RotateBeforeAnnotation]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return ctrl.Result{}, r.fail(ctx, req, ReasonNotRotatable,
				fmt.Sprintf("annotation %s=%q is not a positive duration (such as 240h)", RotateBeforeAnnotation, v), false)
		}
		policy.Window = d
	}
	kc := s.Data[fleetv1.KubeconfigKey]
	tok, err := ParseToken(bearerToken(kc))
	if err != nil {
		return ctrl.Result{}, r.fail(ctx, req, ReasonNotRotatable, err.Error(), false)
	}
	now := r.opts.Now()
	action, at := policy.Decide(now, tok.IssuedAt, tok.ExpiresAt)
	switch action {
	case Expired:
		return ctrl.Result{}, r.fail(ctx, req, ReasonTokenExpired, fmt.Sprintf(
			"the registered token expired at %s, before it could be rotated; an expired token cannot ask for its successor: run etcdfleetctl register %s again",
			stamp(tok.ExpiresAt), req.Name), false)
	case Wait:
		return ctrl.Result{RequeueAfter: at.Sub(now)}, r.scheduled(ctx, req, at)
	}
	newKC, expires, err := r.rotate(ctx, kc, tok)
	if err != nil {
		reason := ReasonRotationFailed
		switch {
		case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy"):
			// Granted, but the admission policy refused the request.
			reason = ReasonWorkloadRefused
		case apierrors.IsForbidden(err):
			reason = ReasonWorkloadForbidden
			err = fmt.Errorf("%w; the workload cluster must grant it: etcdfleetctl register %s --allow-token-rotation, "+
				"or the workload chart's tokenRotation.enabled", err, req.Name)
		case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
			reason = ReasonWorkloadRefused
		}
		return ctrl.Result{}, r.fail(ctx, req, reason, "minting the next token: "+err.Error(), true)
	}
	s.Data[fleetv1.KubeconfigKey] = newKC
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[fleetv1.TokenExpiresAtAnnotation] = stamp(expires)
	// Optimistic concurrency: a register run meanwhile wins, and its
	// token is the one kept. The token minted here then stays unused,
	// bound to the registration's Secret: it expires, or unregister
	// revokes it with the rest.
	if err := r.c.Update(ctx, &s); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{Requeue: true}, nil
		}
		reason, msg := ReasonRotationFailed, "storing the new token: "+err.Error()
		if apierrors.IsForbidden(err) {
			reason = ReasonManagementForbidden
			msg = "the manager may not update the registration Secret (" + err.Error() +
				"); grant it with the etcdfleet chart's tokenRotation.enabled"
		}
		return ctrl.Result{}, r.fail(ctx, req, reason, msg, true)
	}
	return ctrl.Result{}, r.rotated(ctx, req, now, expires, policy)
}

// rotate mints the next token of the registered ServiceAccount, bound to
// the same registration Secret as the current one, for the same lifetime
// (within workload.MaxRotatedTokenSeconds), and returns the kubeconfig
// holding it and its expiry.
func (r *Rotator) rotate(ctx context.Context, kc []byte, tok Token) ([]byte, time.Time, error) {
	cfg, err := kubeconfigsecret.RESTConfig(kc)
	if err != nil {
		return nil, time.Time{}, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = r.opts.UserAgent
	cfg.Timeout = r.opts.Timeout
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, time.Time{}, err
	}
	secs := int64(workload.MaxRotatedTokenSeconds)
	if !tok.IssuedAt.IsZero() && tok.IssuedAt.Before(tok.ExpiresAt) {
		// The apiserver refuses less than ten minutes.
		secs = max(600, min(secs, int64(tok.ExpiresAt.Sub(tok.IssuedAt).Seconds())))
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	tr, err := cs.CoreV1().ServiceAccounts(tok.Namespace).CreateToken(ctx, tok.ServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs, BoundObjectRef: &authenticationv1.BoundObjectReference{
			APIVersion: "v1", Kind: "Secret", Name: tok.SecretName, UID: tok.SecretUID}},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, time.Time{}, err
	}
	out, err := withToken(kc, tr.Status.Token)
	return out, ExpiryOf(tr), err
}

// ExpiryOf is when the minted token stops working: its own exp claim. The
// apiserver computes status.expirationTimestamp from a separate clock read,
// which can fall a second before or after the claim; the annotation states
// what the token itself says, so rotation is scheduled from that.
func ExpiryOf(tr *authenticationv1.TokenRequest) time.Time {
	if t, err := ParseToken(tr.Status.Token); err == nil || errors.Is(err, ErrNotBound) {
		return t.ExpiresAt
	}
	return tr.Status.ExpirationTimestamp.Time
}

// bearerToken is the token of kc's current context; "" when there is none.
func bearerToken(kc []byte) string {
	c, err := clientcmd.Load(kc)
	if err != nil || c.Contexts[c.CurrentContext] == nil || c.AuthInfos[c.Contexts[c.CurrentContext].AuthInfo] == nil {
		return ""
	}
	return c.AuthInfos[c.Contexts[c.CurrentContext].AuthInfo].Token
}

// withToken is kc with its current context's token replaced, all else kept.
func withToken(kc []byte, token string) ([]byte, error) {
	c, err := clientcmd.Load(kc)
	if err != nil {
		return nil, err
	}
	ctx := c.Contexts[c.CurrentContext]
	if ctx == nil || c.AuthInfos[ctx.AuthInfo] == nil {
		return nil, errors.New("the kubeconfig has no current user")
	}
	c.AuthInfos[ctx.AuthInfo].Token = token
	return clientcmd.Write(*c)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
