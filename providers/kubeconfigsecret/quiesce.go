package kubeconfigsecret

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"
)

// ErrQuiesced is the error of a request to a workload cluster after its
// connection was quiesced (Provider.Quiesce): this process no longer
// holds the cluster and sends it nothing more.
var ErrQuiesced = fmt.Errorf("kubeconfigsecret: the connection was quiesced; this replica no longer owns the cluster")

// quiesceGate counts one connection attempt's requests in flight and,
// once closed, refuses new ones. A request counts from the moment it is
// sent until its response headers arrive (or it fails): by then the
// apiserver has received it, which is what a fence must precede. Watch and
// port-forward streams stay open after that; they end with the attempt's
// context, which the ownership ends.
type quiesceGate struct {
	mu       sync.Mutex
	closed   bool
	inflight int
	idle     chan struct{} // closed when closed and nothing is in flight
}

func newQuiesceGate() *quiesceGate { return &quiesceGate{idle: make(chan struct{})} }

// abandonedGrace is how long a request that its context abandoned counts
// as in flight after it returned. Its bytes may be on the wire already,
// and the apiserver received such requests up to 66 ms after the fence
// release that the early return let through (the fence e2e, at load 25);
// a second covers that with room, and delays only releases that cancel
// requests midway.
const abandonedGrace = time.Second

// wrap admits each request only while the gate is open.
func (g *quiesceGate) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		if !g.enter() {
			return nil, ErrQuiesced
		}
		resp, err := rt.RoundTrip(r)
		if err != nil && r.Context().Err() != nil {
			time.AfterFunc(abandonedGrace, g.leave)
			return resp, err
		}
		g.leave()
		return resp, err
	})
}

func (g *quiesceGate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.inflight++
	return true
}

func (g *quiesceGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inflight--
	g.signalIdle()
}

// close refuses every later request; it may be called more than once.
func (g *quiesceGate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	g.signalIdle()
}

// signalIdle is called with g.mu held.
func (g *quiesceGate) signalIdle() {
	if g.closed && g.inflight == 0 {
		select {
		case <-g.idle:
		default:
			close(g.idle)
		}
	}
}

// drain closes the gate and waits until nothing is in flight, or ctx ends.
func (g *quiesceGate) drain(ctx context.Context) error {
	g.close()
	select {
	case <-g.idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Quiesce stops every request of this process to cluster name and waits
// until those in flight were answered (or ctx ends): the connection's
// clients fail every later request with ErrQuiesced until the cluster is
// connected anew, which needs a new ownership (Options.Ownership). An
// ownership coordinator calls it before giving up the cluster's fence, so
// that nothing this replica sent reaches the cluster under the next
// owner's fence: multicluster-runtime's sharded coordinator (v0.24.1)
// releases a fence concurrently with cancelling the engagement it guards,
// and a request or Event already under way would otherwise arrive after
// the release. The current ownership ending closes the gate too. A
// cluster that is not connected has nothing in flight; Quiesce returns at
// once. Either way no attempt begun later under the same ownership sends
// anything (a pre-flight retried after a failure, say).
func (p *Provider) Quiesce(ctx context.Context, name string) error {
	p.mu.Lock()
	c := p.conns[name]
	retired := slices.Clone(p.retired[name])
	p.mu.Unlock()
	for _, g := range retired {
		if err := g.drain(ctx); err != nil {
			return err
		}
	}
	if c == nil {
		return nil
	}
	c.mu.Lock()
	g := c.gate
	// Sticky for the current ownership: a retry under it begins with a
	// closed gate (conn.begin) or not at all (conn.run).
	c.quiescedOwn = c.ownCtx
	if c.p.opts.Ownership == nil {
		c.quiescedOwn = c.ctx
	}
	c.mu.Unlock()
	if g == nil {
		return nil
	}
	return g.drain(ctx)
}

// quiesced reports whether Quiesce ended ownership own.
func (c *conn) quiesced(own context.Context) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return own == c.quiescedOwn
}

// retire closes the gate of a connection being removed, and the gates of
// attempts it begins later (begin), and returns the current one (nil if
// it never began one).
func (c *conn) retire() *quiesceGate {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.retired = true
	if c.gate != nil {
		c.gate.close()
	}
	return c.gate
}

// retireLocked keeps g among the retired gates of name until nothing is in
// flight through it. Called with p.mu held.
func (p *Provider) retireLocked(name string, g *quiesceGate) {
	if g == nil {
		return
	}
	p.retired[name] = append(p.retired[name], g)
	go func() {
		<-g.idle
		p.mu.Lock()
		defer p.mu.Unlock()
		p.retired[name] = slices.DeleteFunc(p.retired[name], func(r *quiesceGate) bool { return r == g })
		if len(p.retired[name]) == 0 {
			delete(p.retired, name)
		}
	}()
}
