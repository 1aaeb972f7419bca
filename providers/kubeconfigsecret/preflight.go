package kubeconfigsecret

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// preflight checks, under PreflightTimeout, that the server answers (its
// version), that the credentials may do everything in AccessChecks, and
// that they are constrained (checkConstraint).
// Nothing is built or cached for the cluster before it passes. The rules
// the credentials had just before the access check are kept in rights, so
// that its first re-check need not ask every permission again.
func (c *conn) preflight(actx context.Context, cfg *rest.Config, red redactor, rights *rightsWatch) (string, *failure) {
	d := c.p.opts.PreflightTimeout
	ctx, cancel := context.WithTimeout(actx, d)
	defer cancel()
	pcfg := rest.CopyConfig(cfg)
	// A backstop for calls that ignore contexts; a little longer than the
	// context's deadline, which is what normally ends a hung pre-flight.
	pcfg.Timeout, pcfg.UserAgent = d+time.Second, c.p.opts.UserAgent(PurposePreflight)
	cs, err := kubernetes.NewForConfig(pcfg)
	if err != nil {
		return "", classify(err, "pre-flight client", red)
	}
	ver, err := serverVersion(ctx, cs.Discovery().RESTClient())
	if err != nil {
		return "", c.timeoutOr(ctx, actx, err, fmt.Sprintf("pre-flight: the API server did not answer within %s", d),
			"pre-flight: server version", red)
	}
	missing, err := unservedKinds(ctx, cs.Discovery().RESTClient(), c.p.watched)
	if err != nil {
		return "", c.timeoutOr(ctx, actx, err, fmt.Sprintf("pre-flight: discovery did not finish within %s", d),
			"pre-flight: discovery", red)
	}
	if len(missing) > 0 {
		return "", &failure{reason: ReasonMissingAPI, msg: "pre-flight: the API server does not serve " +
			strings.Join(missing, ", ") + " (are the etcdfleet CRDs installed in the workload cluster?)"}
	}
	sum := rights.rulesFingerprint(ctx)
	denied, err := CheckAccess(ctx, cs.AuthorizationV1().SelfSubjectAccessReviews(), c.p.opts.AccessChecks, rights.namespaces)
	if err != nil {
		return "", c.timeoutOr(ctx, actx, err, fmt.Sprintf("pre-flight: access checks did not finish within %s", d),
			"pre-flight: access check", red)
	}
	if len(denied) > 0 {
		return "", &failure{reason: ReasonForbidden,
			msg: "pre-flight: the credentials lack permissions: " + strings.Join(denied, "; ")}
	}
	if f := c.preflightConstraint(ctx, actx, rights, red); f != nil {
		return "", f
	}
	rights.rulesSum, rights.lastFull = sum, time.Now()
	return ver, nil
}

// timeoutOr reports the step's own timeout plainly, and classifies other
// errors.
func (c *conn) timeoutOr(ctx, actx context.Context, err error, timeoutMsg, step string, red redactor) *failure {
	var netErr net.Error
	timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout())
	if timedOut && actx.Err() == nil {
		return &failure{reason: ReasonUnreachable, msg: timeoutMsg}
	}
	return classify(err, step, red)
}

func serverVersion(ctx context.Context, rc rest.Interface) (string, error) {
	raw, err := rc.Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return "", err
	}
	var info version.Info
	if err := json.Unmarshal(raw, &info); err != nil {
		return "", fmt.Errorf("decode /version: %w", err)
	}
	return info.GitVersion, nil
}

// unservedKinds returns the kinds in gvks that the server does not serve,
// as Kind.group/version, sorted: one discovery request per group version.
// The caches of an engaged cluster may map kinds without discovery (a
// static RESTMapper in ClusterOptions, as etcdfleet's manager passes), so
// this is where a missing CRD is found.
func unservedKinds(ctx context.Context, rc rest.Interface, gvks []schema.GroupVersionKind) ([]string, error) {
	byGV := map[schema.GroupVersion][]string{}
	for _, gvk := range gvks {
		byGV[gvk.GroupVersion()] = append(byGV[gvk.GroupVersion()], gvk.Kind)
	}
	var missing []string
	for gv, kinds := range byGV {
		p := "/apis/" + gv.Group + "/" + gv.Version
		if gv.Group == "" {
			p = "/api/" + gv.Version
		}
		served := map[string]bool{}
		raw, err := rc.Get().AbsPath(p).Do(ctx).Raw()
		switch {
		case apierrors.IsNotFound(err): // the whole group version is missing
		case err != nil:
			return nil, err
		default:
			var list metav1.APIResourceList
			if err := json.Unmarshal(raw, &list); err != nil {
				return nil, fmt.Errorf("decode %s: %w", p, err)
			}
			for _, r := range list.APIResources {
				if !strings.Contains(r.Name, "/") { // not a subresource
					served[r.Kind] = true
				}
			}
		}
		for _, k := range kinds {
			if !served[k] {
				missing = append(missing, k+"."+gv.String())
			}
		}
	}
	sort.Strings(missing)
	return missing, nil
}

// CheckAccess asks one SelfSubjectAccessReview per check and verb, all at
// once, cluster-wide, or in each of namespaces when the cluster's caches are
// scoped to them (the ClusterScoped checks still cluster-wide). It returns
// the denied permissions, sorted, or the first error. Pre-flight and the
// re-checks of an engaged cluster use it; it is exported so that tools
// (and tests) can verify credentials as the provider will.
func CheckAccess(ctx context.Context, ssar authorizationv1client.SelfSubjectAccessReviewInterface, checks []AccessCheck, namespaces []string) ([]string, error) {
	return checkAccess(ctx, ssar, checks, namespaces, true)
}

// checkAccess returns the permissions of checks whose answer is not want:
// the denied ones when want is true (CheckAccess), the allowed ones when
// it is false (Options.ForbiddenChecks).
func checkAccess(ctx context.Context, ssar authorizationv1client.SelfSubjectAccessReviewInterface, checks []AccessCheck, namespaces []string, want bool) ([]string, error) {
	if len(namespaces) == 0 {
		return checkAccessIn(ctx, ssar, checks, "", want)
	}
	var clusterScoped, namespaced []AccessCheck
	for _, ch := range checks {
		if ch.ClusterScoped {
			clusterScoped = append(clusterScoped, ch)
		} else {
			namespaced = append(namespaced, ch)
		}
	}
	out, err := checkAccessIn(ctx, ssar, clusterScoped, "", want)
	if err != nil {
		return nil, err
	}
	for _, ns := range namespaces {
		denied, err := checkAccessIn(ctx, ssar, namespaced, ns, want)
		if err != nil {
			return nil, err
		}
		for _, d := range denied {
			out = append(out, d+" in namespace "+ns)
		}
	}
	return out, nil
}

// checkAccessIn checks in namespace ns ("": cluster-wide).
func checkAccessIn(ctx context.Context, ssar authorizationv1client.SelfSubjectAccessReviewInterface, checks []AccessCheck, ns string, want bool) ([]string, error) {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		denied = map[int][]string{}
		errs   []error
	)
	for i, ch := range checks {
		for _, verb := range ch.Verbs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := ssar.Create(ctx, &authorizationv1.SelfSubjectAccessReview{
					Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
						Verb: verb, Group: ch.Group, Resource: ch.Resource, Subresource: ch.Subresource, Name: ch.Name, Namespace: ns,
					}},
				}, metav1.CreateOptions{})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					errs = append(errs, err)
				case r.Status.Allowed != want:
					denied[i] = append(denied[i], verb)
				}
			}()
		}
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, errs[0]
	}
	out := make([]string, 0, len(denied))
	for i, verbs := range denied {
		sort.Strings(verbs)
		d := checks[i]
		d.Verbs = verbs
		out = append(out, d.String())
	}
	sort.Strings(out)
	return out, nil
}

// syncInformers starts the informers of the watched kinds at once and
// waits for them under SyncTimeout. It waits in its own goroutine: a
// RESTMapper lookup ignores contexts and is only bounded by RESTTimeout.
func (c *conn) syncInformers(s *session, startErr <-chan error) *failure {
	d := c.p.opts.SyncTimeout
	ctx, cancel := context.WithTimeout(s.ctx, d)
	defer cancel()
	var (
		mu      sync.Mutex
		pending = map[string]crcache.Informer{}
	)
	done := make(chan error, 1)
	go func() {
		cache := s.cl.GetCache()
		if !cache.WaitForCacheSync(ctx) {
			done <- errors.New("the cache did not start")
			return
		}
		for _, obj := range c.p.opts.WatchedKinds {
			name := fmt.Sprintf("%T", obj)
			if gvk, err := apiutil.GVKForObject(obj, s.cl.GetScheme()); err == nil {
				name = gvk.GroupKind().String()
			}
			inf, err := cache.GetInformer(ctx, obj, crcache.BlockUntilSynced(false))
			if err != nil {
				done <- fmt.Errorf("informer for %s: %w", name, err)
				return
			}
			if _, err := inf.AddEventHandler(s.budget.counter()); err != nil {
				done <- fmt.Errorf("informer for %s: %w", name, err)
				return
			}
			mu.Lock()
			pending[name] = inf
			mu.Unlock()
		}
		if !cache.WaitForCacheSync(ctx) {
			done <- ctx.Err()
			return
		}
		done <- nil
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
	case <-s.budget.exceeded: // the informers would retry it until SyncTimeout
		return s.budget.failure()
	}
	select {
	case serr := <-startErr:
		if serr != nil {
			return classify(serr, "start cluster", s.red)
		}
	default:
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && s.ctx.Err() == nil {
		mu.Lock()
		var unsynced []string
		for name, inf := range pending {
			if !inf.HasSynced() {
				unsynced = append(unsynced, name)
			}
		}
		mu.Unlock()
		sort.Strings(unsynced)
		return &failure{reason: ReasonSyncFailed, msg: fmt.Sprintf(
			"cache sync: informers did not sync within %s (not synced: %s)", d, strings.Join(unsynced, ", "))}
	}
	if err != nil {
		return classify(err, "cache sync", s.red)
	}
	if s.ctx.Err() != nil {
		return &failure{reason: ReasonSyncFailed, msg: "cache sync: the cluster stopped"}
	}
	return nil
}

// probeClient is a client for /version bounded by the probe timeout. It is
// kept for the cluster's engagement, so it is the discovery client alone,
// not a clientset: that would hold some fifty typed clients per cluster.
func probeClient(cfg *rest.Config, timeout time.Duration, ua string) (rest.Interface, error) {
	pcfg := rest.CopyConfig(cfg)
	pcfg.Timeout, pcfg.UserAgent = timeout, ua
	dc, err := discovery.NewDiscoveryClientForConfig(pcfg)
	if err != nil {
		return nil, err
	}
	return dc.RESTClient(), nil
}

// probe asks for /version: cheap, and answered 401 once the credentials
// are invalid (an authenticated request with bad credentials is never
// treated as anonymous).
func (c *conn) probe(actx context.Context, s *session) (string, error) {
	ctx, cancel := context.WithTimeout(actx, c.p.opts.ProbeTimeout)
	defer cancel()
	start := time.Now()
	v, err := serverVersion(ctx, s.probe)
	result := "success"
	if err != nil {
		result = "failure"
	}
	probeDuration.WithLabelValues(c.p.opts.Namespace, result).Observe(time.Since(start).Seconds())
	return v, err
}
