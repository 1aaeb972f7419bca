package kubeconfigsecret

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// claimant is a registered Secret that reaches one cluster identity, as
// every replica sees it: from the Secret itself and from the claims
// recorded by Options.RecordedClaims.
type claimant struct {
	name string
	// vouched: the Secret's Options.IdentityAnnotation names the identity,
	// written by the tool that registered it after reading the identity
	// with the same credentials.
	vouched bool
	created time.Time
}

// rankClaimants returns the name of the claimant that owns the identity:
// a vouched Secret before any other, then the oldest, then by name. The
// order uses only what every replica reads alike (the Secrets and the
// recorded claims), so replicas and restarts agree, whichever Secret
// passes pre-flight first (security review L8). Nil in, "" out.
func rankClaimants(cs []claimant) string {
	if len(cs) == 0 {
		return ""
	}
	best := slices.MinFunc(cs, func(a, b claimant) int {
		switch {
		case a.vouched != b.vouched:
			if a.vouched {
				return -1
			}
			return 1
		case !a.created.Equal(b.created):
			return a.created.Compare(b.created)
		}
		return strings.Compare(a.name, b.name)
	})
	return best.name
}

// claimantOf returns the registered Secret sec as a claimant of id, and
// false when its annotation names another identity (its kubeconfig
// reaches a cluster it was not registered for, so it claims nothing).
func (p *Provider) claimantOf(sec *corev1.Secret, id string) (claimant, bool) {
	declared := p.declaredIdentity(sec)
	if declared != "" && declared != id {
		return claimant{}, false
	}
	return claimant{name: sec.Name, vouched: declared == id, created: sec.CreationTimestamp.Time}, true
}

// declaredIdentity is the identity the Secret says it registers, "" when
// it says none (or no IdentityAnnotation is configured).
func (p *Provider) declaredIdentity(sec *corev1.Secret) string {
	if p.opts.IdentityAnnotation == "" {
		return ""
	}
	return sec.Annotations[p.opts.IdentityAnnotation]
}

// mismatch refuses a Secret whose annotation names another identity than
// the cluster its kubeconfig reaches: the kubeconfig was changed to point
// elsewhere, or another cluster answers at the registered address.
func (p *Provider) mismatch(sec *corev1.Secret, id string) *failure {
	if declared := p.declaredIdentity(sec); declared != "" && declared != id {
		return &failure{reason: ReasonIdentityMismatch, msg: fmt.Sprintf(
			"the Secret was registered for the cluster with identity %s (annotation %s), but its kubeconfig reaches the cluster with identity %s: "+
				"register the cluster again if it was rebuilt, or fix the kubeconfig", declared, p.opts.IdentityAnnotation, id)}
	}
	return nil
}

// owner decides which Secret owns identity id, from the claimants: the
// Secret self, the Secrets recorded for id, and the current in-memory
// owner, each read once from the cache. It returns "" when self is no
// longer registered; a failure when the recorded claims cannot be read
// (retried like any pre-flight failure: a claim is never decided on half
// the facts), or, with the winner among the others, IdentityMismatch when
// self's annotation names another identity. Called without p.mu held.
func (p *Provider) owner(ctx context.Context, self, id string) (string, *failure) {
	names := []string{self}
	if rec := p.opts.RecordedClaims; rec != nil {
		recorded, err := rec(ctx, id)
		if err != nil {
			return "", &failure{reason: ReasonError, msg: "reading the recorded cluster claims: " + err.Error()}
		}
		names = append(names, recorded...)
	}
	p.mu.Lock()
	if cur, ok := p.owners[id]; ok {
		names = append(names, cur)
	}
	p.mu.Unlock()
	slices.Sort(names)
	var (
		cs  []claimant
		mis *failure
	)
	for _, n := range slices.Compact(names) {
		sec, ok := p.registered(ctx, n)
		if !ok {
			continue
		}
		if n == self {
			mis = p.mismatch(sec, id)
		}
		if c, ok := p.claimantOf(sec, id); ok {
			cs = append(cs, c)
		}
	}
	return rankClaimants(cs), mis
}

// outrankedBy returns the Secret that owns c's cluster now, when another
// one does: with RecordedClaims, two replicas (or two processes around a
// restart) may both have engaged one cluster before either recorded it,
// and the engaged Secret that ranks second must give way. It is asked at
// every rights re-check, from the caches, so it costs no API call; "" when
// c still owns it or nothing can be said.
func (c *conn) outrankedBy(ctx context.Context) string {
	if c.p.opts.RecordedClaims == nil {
		return ""
	}
	st, ok := c.p.State(c.name)
	if !ok || st.ClusterID == "" {
		return ""
	}
	winner, f := c.p.owner(ctx, c.name, st.ClusterID)
	if (f != nil && f.reason != ReasonIdentityMismatch) || winner == c.name {
		return ""
	}
	return winner
}
