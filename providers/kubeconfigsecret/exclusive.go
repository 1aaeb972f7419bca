package kubeconfigsecret

import (
	"context"
	"fmt"
)

// ClaimStore makes the claim on a cluster identity exclusive across the
// replicas that run one provider each (Options.Claims). The rank of
// rankClaimants decides which Secret should own an identity; the store
// decides which one may run it now, so that two Secrets for one cluster
// that two replicas connect at the same moment, before either recorded
// its claim, do not both engage.
type ClaimStore interface {
	// Acquire makes the Secret name the holder of identity id, unless
	// another Secret that may still be running the cluster holds it, and
	// returns the holder.
	Acquire(ctx context.Context, id, name string) (holder string, err error)
	// Release gives up name's hold on id, if name holds it.
	Release(ctx context.Context, id, name string) error
}

// holdExclusive takes the exclusive claim on id for c (Options.Claims),
// after the rank chose c, and returns the holder: it fails with
// ReasonDuplicateCluster while another Secret holds it. That one gives way at its next rights re-check
// if c outranks it (outrankedBy: c's refusal records c's claim), and
// releases the claim once its engagement has ended (run). A claim c held
// on another identity (its kubeconfig now reaches another cluster) is
// released first.
func (c *conn) holdExclusive(ctx context.Context, id string) (string, *failure) {
	cs := c.p.opts.Claims
	if cs == nil {
		return c.name, nil
	}
	c.mu.Lock()
	prev := c.held
	c.mu.Unlock()
	if prev != "" && prev != id {
		c.releaseHeld()
	}
	holder, err := cs.Acquire(ctx, id, c.name)
	if err != nil {
		return "", &failure{reason: ReasonError, msg: "taking the cluster's claim: " + err.Error()}
	}
	if holder != c.name {
		return holder, &failure{reason: ReasonDuplicateCluster, msg: fmt.Sprintf(
			"the workload cluster (identity %s) is engaged through Secret %s/%s, which holds its claim (possibly on another replica); "+
				"this Secret is refused until that one gives way or is removed", id, c.p.opts.Namespace, holder)}
	}
	c.mu.Lock()
	c.held = id
	c.mu.Unlock()
	return holder, nil
}

// releaseHeld releases the exclusive claim c holds, if any, once c's
// engagement has ended. Best effort: a claim left behind is taken over
// once its holder is no longer registered and no replica runs it
// (ClaimStore.Acquire).
func (c *conn) releaseHeld() {
	c.mu.Lock()
	id := c.held
	c.held = ""
	c.mu.Unlock()
	if id == "" || c.p.opts.Claims == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.p.opts.PreflightTimeout)
	defer cancel()
	if err := c.p.opts.Claims.Release(ctx, id, c.name); err != nil {
		c.log.Info("Releasing the cluster's claim failed; it is taken over once this Secret is gone", "error", err.Error())
	}
}

// forgetHeld drops c's hold without releasing it: another replica now
// owns the Secret, runs the cluster under the same claim (the holder is
// the Secret), and must keep it.
func (c *conn) forgetHeld() {
	c.mu.Lock()
	c.held = ""
	c.mu.Unlock()
}
