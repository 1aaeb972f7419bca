package kubeconfigsecret

import (
	"context"
	"errors"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
)

// KubeSystemUID identifies a Kubernetes cluster by the UID of its
// kube-system Namespace: every cluster has one, it never changes for the
// cluster's life, and two clusters never share it, whatever addresses or
// credentials reach them. Set it as Options.Identify; the credentials then
// need get on the kube-system Namespace (cluster-wide: a ClusterRole with
// resourceNames ["kube-system"] suffices, also for a namespaced
// registration).
func KubeSystemUID(ctx context.Context, cfg *rest.Config) (string, error) {
	cs, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	ns, err := cs.Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return string(ns.UID), nil
}

// identify runs Options.Identify, as part of pre-flight and bounded like it
// by PreflightTimeout. Without Identify, clusters have no identity and
// duplicates are not detected.
func (c *conn) identify(actx context.Context, cfg *rest.Config, red redactor) (string, *failure) {
	f := c.p.opts.Identify
	if f == nil {
		return "", nil
	}
	d := c.p.opts.PreflightTimeout
	ctx, cancel := context.WithTimeout(actx, d)
	defer cancel()
	id, err := f(ctx, rest.CopyConfig(cfg))
	if err == nil && id == "" {
		err = errors.New("empty identity")
	}
	if err != nil {
		return "", c.timeoutOr(ctx, actx, err, fmt.Sprintf("pre-flight: the cluster's identity was not read within %s", d),
			"pre-flight: cluster identity", red)
	}
	return id, nil
}

// claim makes c the owner of the cluster identified by id, unless another
// registered Secret ranks before it (rankClaimants: one vouched for by its
// annotation, then the oldest), as every replica and restart decides
// alike. An owner that c outranks is made to reconnect, which refuses it.
// The refused Secret's failure names the owner. An empty id (no Identify)
// claims nothing.
func (p *Provider) claim(ctx context.Context, c *conn, id string) *failure {
	if id == "" {
		return nil
	}
	winner, f := p.owner(ctx, c.name, id) // IdentityMismatch too
	if f != nil {
		return f
	}
	p.mu.Lock()
	st := p.states[c.name]
	if p.conns[c.name] != c || st == nil || winner == "" {
		p.mu.Unlock()
		return &failure{reason: ReasonError, msg: "the Secret was removed"}
	}
	if winner != c.name {
		p.mu.Unlock()
		return &failure{reason: ReasonDuplicateCluster, msg: fmt.Sprintf(
			"the workload cluster (identity %s) is already registered by Secret %s/%s (vouched for by its %s annotation, or registered earlier); "+
				"this Secret is refused while that one is registered: remove one of the two",
			id, p.opts.Namespace, winner, p.opts.IdentityAnnotation)}
	}
	p.mu.Unlock()
	if holder, f := c.holdExclusive(ctx, id); f != nil {
		// c outranks the holder: one of this process gives way now, one
		// of another replica at its next rights re-check.
		p.mu.Lock()
		h := p.conns[holder]
		p.mu.Unlock()
		if h != nil && holder != c.name {
			h.log.Info("Another Secret outranks this one for its cluster; reconnecting to be refused", "owner", c.name)
			h.retryNow()
		}
		return f
	}
	p.mu.Lock()
	if p.conns[c.name] != c || p.states[c.name] == nil {
		p.mu.Unlock()
		return &failure{reason: ReasonError, msg: "the Secret was removed"}
	}
	prev, had := p.owners[id]
	var displaced *conn
	if had && prev != c.name {
		displaced = p.conns[prev]
	}
	released := p.release(c.name, id)
	p.owners[id] = c.name
	p.mu.Unlock()
	p.update(c, func(st *ClusterState) { st.ClusterID = id })
	if displaced != nil {
		displaced.log.Info("Another Secret outranks this one for its cluster; reconnecting to be refused", "owner", c.name)
		displaced.retryNow()
	}
	if released {
		p.retryDuplicates()
	}
	return nil
}

// release drops the claims of the named Secret other than keep, and
// reports whether it dropped any. Called with p.mu held.
func (p *Provider) release(name, keep string) bool {
	released := false
	for id, owner := range p.owners {
		if owner == name && id != keep {
			delete(p.owners, id)
			released = true
		}
	}
	return released
}

// retryDuplicates makes every Secret refused as a duplicate try again at
// once, now that a claim was released: the first of them to pass
// pre-flight engages, the others are refused again.
func (p *Provider) retryDuplicates() {
	p.mu.Lock()
	var retry []*conn
	for name, st := range p.states {
		if st.Reason == ReasonDuplicateCluster && p.conns[name] != nil {
			retry = append(retry, p.conns[name])
		}
	}
	p.mu.Unlock()
	sort.Slice(retry, func(i, j int) bool { return retry[i].name < retry[j].name })
	for _, c := range retry {
		c.retryNow()
	}
}

// retryNow ends the current attempt or backoff wait, as a new kubeconfig
// would: the owner starts over at once with a fresh backoff.
func (c *conn) retryNow() {
	c.mu.Lock()
	cancel := c.attemptCancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// claimIdentity reads the cluster's identity and claims it for c, or
// refuses c as a duplicate (with a Warning Event on its Secret, once per
// refusal streak).
func (c *conn) claimIdentity(actx context.Context, cfg *rest.Config, red redactor) *failure {
	id, f := c.identify(actx, cfg, red)
	if f != nil {
		return f
	}
	f = c.p.claim(actx, c, id)
	if f == nil || (f.reason != ReasonDuplicateCluster && f.reason != ReasonIdentityMismatch) {
		return f
	}
	if st, _ := c.p.State(c.name); st.Reason != f.reason {
		// EventDuplicateCluster or EventIdentityMismatch: the same words.
		c.p.event(c.name, corev1.EventTypeWarning, f.reason, f.msg)
	}
	if f.reason == ReasonDuplicateCluster {
		// Recorded, so that the refusal persists (RecordedClaims) and the
		// dashboard shows which cluster the Secret reaches.
		c.p.update(c, func(st *ClusterState) { st.ClusterID = id })
	}
	return f
}
