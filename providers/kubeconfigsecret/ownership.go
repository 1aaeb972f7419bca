package kubeconfigsecret

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// ReasonNotOwned: with Options.Ownership, another replica owns the cluster
// (or none does yet); this one does not connect to it.
const ReasonNotOwned = "NotOwned"

// removedError is the cause a conn's context is cancelled with, so that an
// ownership context that ends because of another cluster's removal can be
// told from one the coordinator ended (see ownershipAware.Engage).
type removedError struct{ name string }

func (e removedError) Error() string { return fmt.Sprintf("cluster %s was removed", e.name) }

// ownershipAware is the provider's multicluster.Aware on Options.Ownership:
// the coordinator engages it for each cluster this replica owns, and the
// context it passes lives exactly as long as the ownership.
type ownershipAware struct{ p *Provider }

var _ multicluster.Aware = ownershipAware{}

// Engage hands ctx to the cluster's connection owner; it never blocks.
func (a ownershipAware) Engage(ctx context.Context, name multicluster.ClusterName, _ cluster.Cluster) error {
	a.p.mu.Lock()
	c := a.p.conns[string(name)]
	a.p.mu.Unlock()
	if c == nil {
		return nil // removed meanwhile: the coordinator forgets it with its context
	}
	c.own(ctx)
	context.AfterFunc(ctx, func() { c.ownershipEnded(ctx) })
	return nil
}

// claim asks Options.Ownership to consider c; the coordinator engages
// ownershipAware for it when (and as long as) this replica owns it.
func (c *conn) claim() {
	if o := c.p.opts.Ownership; o != nil {
		// A nil cluster.Cluster: the coordinator only hands it on to
		// ownershipAware, which connects by itself once it owns the cluster.
		if err := o.Engage(c.ctx, multicluster.ClusterName(c.name), nil); err != nil && c.ctx.Err() == nil {
			c.log.Error(err, "Cannot hand the cluster to the ownership coordinator")
		}
	}
}

// own records the context of a new ownership and wakes the owner goroutine.
func (c *conn) own(ctx context.Context) {
	c.mu.Lock()
	c.ownCtx = ctx
	c.mu.Unlock()
	select {
	case c.owned <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// ownershipEnded re-claims the cluster when its ownership context ended
// only because another cluster was removed. multicluster-runtime's sharded
// coordinator (v0.24.1) derives the contexts of the clusters it starts
// while handling one cluster's Engage from that cluster's context, so that
// cluster's removal would end them too while the coordinator still counts
// them as started, and they would stay unconnected until rebalanced.
// Engaging again is safe: the coordinator keeps the fence and decides anew.
func (c *conn) ownershipEnded(ctx context.Context) {
	var removed removedError
	if c.ctx.Err() != nil || !errors.As(context.Cause(ctx), &removed) || removed.name == c.name {
		return
	}
	c.log.V(1).Info("Ownership context ended with another cluster's removal; claiming again", "removed", removed.name)
	c.claim()
}

// waitOwned returns the context of the current ownership, waiting for one;
// without Options.Ownership it returns c.ctx at once. ok is false when c
// stops first.
func (c *conn) waitOwned() (ctx context.Context, ok bool) {
	if c.p.opts.Ownership == nil {
		return c.ctx, true
	}
	for {
		c.mu.Lock()
		ctx = c.ownCtx
		c.mu.Unlock()
		if ctx != nil && ctx.Err() == nil {
			return ctx, true
		}
		c.p.update(c, func(st *ClusterState) {
			st.Owned, st.Connected, st.Reason = false, false, ReasonNotOwned
			st.Message, st.ConsecutiveFailures = "owned by another replica, or by none yet", 0
		})
		select {
		case <-c.owned:
		case <-c.ctx.Done():
			return nil, false
		}
	}
}
