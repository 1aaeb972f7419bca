package limiter

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

var _ gate.Rollouts = (*Rollouts)(nil)

// Rollouts is the fleet's wave of planned rolls (gate.Rollouts): at most
// MaxConcurrentClusters workload clusters roll at once, the others wait
// their turn in the order they asked, and once more than MaxFailedClusters
// rolls have failed (made no progress for StepTimeout) no further cluster
// joins until they recover or leave. It shares nothing with the Limiter,
// whose tokens still pace every member restart of a roll after the heals:
// Rollouts decides which clusters roll, the Limiter how fast.
type Rollouts struct {
	opts RolloutOptions

	mu sync.Mutex
	// max is the concurrency in force: MaxConcurrentClusters, or this
	// replica's share of it (SetShare).
	max     int
	held    map[rollKey]*heldRoll
	waiting map[rollKey]*waitingRoll
}

// rollKey names one EtcdCluster's roll.
type rollKey struct{ cluster, namespace, name string }

func (k rollKey) String() string {
	if k.cluster == "" {
		return k.namespace + "/" + k.name
	}
	return k.cluster + "/" + k.namespace + "/" + k.name
}

type heldRoll struct {
	done     int
	moved    time.Time // when done last changed (or the place was given)
	lastSeen time.Time
}

type waitingRoll struct{ firstAsk, lastAsk time.Time }

// NewRollouts returns Rollouts with opts, zero fields defaulted.
func NewRollouts(opts RolloutOptions) *Rollouts {
	opts = opts.withDefaults()
	return &Rollouts{opts: opts, max: opts.MaxConcurrentClusters,
		held: map[rollKey]*heldRoll{}, waiting: map[rollKey]*waitingRoll{}}
}

// Join implements gate.Rollouts.
func (r *Rollouts) Join(_ context.Context, roll gate.Roll) gate.Decision {
	k := rollKey{roll.Cluster, roll.Namespace, roll.EtcdCluster}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.opts.Now()
	r.sweepLocked(now)
	if h, ok := r.held[k]; ok {
		h.lastSeen = now
		if roll.Done != h.done {
			h.done, h.moved = roll.Done, now
		}
		return gate.Decision{Cancel: func() {}}
	}
	if roll.Started {
		r.holdLocked(k, roll.Done, now)
		return gate.Decision{Cancel: func() {}}
	}
	w, ok := r.waiting[k]
	if !ok {
		w = &waitingRoll{firstAsk: now}
		r.waiting[k] = w
	}
	w.lastAsk = now
	if why := r.blockedLocked(k, now); why != "" {
		return gate.Decision{Delay: r.opts.MaxDelay, Reason: why, Cancel: func() {}}
	}
	delete(r.waiting, k)
	r.holdLocked(k, roll.Done, now)
	return gate.Decision{Cancel: func() {}}
}

func (r *Rollouts) holdLocked(k rollKey, done int, now time.Time) {
	r.held[k] = &heldRoll{done: done, moved: now, lastSeen: now}
}

// blockedLocked says why k may not join now, or "" when it may: the wave
// is paused by failed rolls, it is full (its cluster is not in it yet),
// or a roll that asked before k waits for the same free place.
func (r *Rollouts) blockedLocked(k rollKey, now time.Time) string {
	if failed := r.failedLocked(now); len(failed) > r.opts.MaxFailedClusters {
		return fmt.Sprintf("the fleet's rollout is paused: %d roll(s) made no progress for %s (%s), more than rollout.maxFailedClusters=%d",
			len(failed), r.opts.StepTimeout, strings.Join(failed, ", "), r.opts.MaxFailedClusters)
	}
	rolling := r.rollingClustersLocked()
	if _, in := rolling[k.cluster]; in {
		return "" // its workload cluster already rolls: no new place taken
	}
	if len(rolling) >= r.max {
		return fmt.Sprintf("waiting for a place in the fleet's rollout: %d of %d workload clusters roll (rollout.maxConcurrentClusters)", len(rolling), r.max)
	}
	// Places go in the order rolls asked: those that asked before k from
	// other workload clusters come first.
	first, ahead := r.waiting[k].firstAsk, map[string]struct{}{}
	for o, w := range r.waiting {
		if _, in := rolling[o.cluster]; !in && o.cluster != k.cluster &&
			(w.firstAsk.Before(first) || (w.firstAsk.Equal(first) && o.String() < k.String())) {
			ahead[o.cluster] = struct{}{}
		}
	}
	if len(rolling)+len(ahead) >= r.max {
		return fmt.Sprintf("waiting for a place in the fleet's rollout: %d workload cluster(s) asked first", len(ahead))
	}
	return ""
}

// rollingClustersLocked are the workload clusters holding a place.
func (r *Rollouts) rollingClustersLocked() map[string]struct{} {
	out := map[string]struct{}{}
	for k := range r.held {
		out[k.cluster] = struct{}{}
	}
	return out
}

// failedLocked names the held rolls whose progress has not moved for
// StepTimeout, sorted.
func (r *Rollouts) failedLocked(now time.Time) []string {
	var out []string
	for k, h := range r.held {
		if now.Sub(h.moved) >= r.opts.StepTimeout {
			out = append(out, k.String())
		}
	}
	slices.Sort(out)
	return out
}

// sweepLocked drops places no longer asked for within HoldTTL (the roll's
// reconciler went away: its manager or its cluster) and waits no longer
// asked for within QueueTTL.
func (r *Rollouts) sweepLocked(now time.Time) {
	for k, h := range r.held {
		if now.Sub(h.lastSeen) > r.opts.HoldTTL {
			delete(r.held, k)
		}
	}
	for k, w := range r.waiting {
		if now.Sub(w.lastAsk) > r.opts.QueueTTL {
			delete(r.waiting, k)
		}
	}
}

// Leave implements gate.Rollouts.
func (r *Rollouts) Leave(roll gate.Roll) {
	k := rollKey{roll.Cluster, roll.Namespace, roll.EtcdCluster}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.held, k)
	delete(r.waiting, k)
}

// ForgetCluster drops a disengaged cluster's places and waits.
func (r *Rollouts) ForgetCluster(cluster string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.held {
		if k.cluster == cluster {
			delete(r.held, k)
		}
	}
	for k := range r.waiting {
		if k.cluster == cluster {
			delete(r.waiting, k)
		}
	}
}

// SetShare makes this replica's concurrency its share of the fleet's for
// owning owned of total registered clusters, ⌊share·MaxConcurrentClusters⌋
// but at least 1 while it owns any (as Slots.SetShare does, and for the
// same reason: a replica that may never roll would halt its clusters'
// upgrades; so with many replicas the fleet may roll up to one cluster per
// replica more than the setting).
func (r *Rollouts) SetShare(owned, total int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.max = 0
	if owned > 0 && total > 0 {
		f := min(1, float64(owned)/float64(total))
		r.max = max(1, int(math.Floor(f*float64(r.opts.MaxConcurrentClusters))))
	}
}

// RolloutStats is what the wave looks like now, for the dashboard.
type RolloutStats struct {
	// MaxConcurrentClusters is the concurrency in force on this replica.
	MaxConcurrentClusters int
	// RollingClusters are the workload clusters holding a place, Rolls the
	// EtcdClusters rolling in them, Waiting the EtcdClusters waiting.
	RollingClusters, Rolls, Waiting int
	// Failed names the rolls without progress for StepTimeout.
	Failed []string
	// Paused: more rolls failed than MaxFailedClusters allows.
	Paused bool
}

// Stats returns the wave's state.
func (r *Rollouts) Stats() RolloutStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.opts.Now()
	r.sweepLocked(now)
	failed := r.failedLocked(now)
	return RolloutStats{MaxConcurrentClusters: r.max, RollingClusters: len(r.rollingClustersLocked()),
		Rolls: len(r.held), Waiting: len(r.waiting), Failed: failed, Paused: len(failed) > r.opts.MaxFailedClusters}
}
