package app

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/peers"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded/sharder"
	"sigs.k8s.io/multicluster-runtime/pkg/util/sanitize"

	"github.com/etcdfleet/etcdfleet/fleet/limiter"
)

// Peer Leases are named and labelled as multicluster-runtime's own
// registry names them, so kubectl shows one kind of peer Lease.
const (
	peerPrefix      = "mcr-peer"
	fencePrefix     = "mcr-shard"
	peerLabel       = "mcr.sigs.k8s.io/peer"
	peerPrefixLabel = "mcr.sigs.k8s.io/prefix"
)

// peerRegistry is the sharded coordinator's view of the live replicas
// (peers.Registry), one Lease mcr-peer-<id> each. multicluster-runtime's
// own registry (v0.24.1) keeps a peer for a fixed 30 s after its last
// renewal and lists peers every 10 s, so a dead replica's clusters would
// wait up to 40 s; this one takes its timings from the fence Lease
// duration, so a takeover waits for about one lease duration:
//   - each replica renews its Lease every ttl/3 and lists the others every
//     refresh (the sync interval, at most ttl/3);
//   - Snapshot leaves out a peer whose renewal is older than ttl at the
//     time of the call, not of the last list: a listed renewal is at most
//     refresh + ttl/3 < ttl old for a live peer;
//   - Snapshot waits for the first list, since an empty snapshot tells the
//     coordinator's hashing that this replica owns every cluster;
//   - a replica that stops deletes its Lease, so the others rebalance at
//     their next list rather than after ttl.
//
// With share set (sharded mode) the Leases also carry the limiter's
// demand and claim (limiter.FleetShare): the registry lists every
// share.listEvery (500 ms, at most the sync interval) and ConfirmDelay
// after each write returned, and looks every partTick whether the
// FleetShare says a write is due (a changed claim or demand, at most once
// per list interval, or the renewal). Its client is uncached, so a List
// reads the store, which the FleetShare's bound rests on.
type peerRegistry struct {
	c       client.Client
	ns      string
	self    sharder.PeerInfo
	ttl     time.Duration
	refresh time.Duration
	log     logr.Logger
	share   *shareLink // nil: the Leases carry no limiter share
	// written is the Lease as this replica last wrote it; only Run's
	// goroutine touches it.
	written *coordv1.Lease

	listed chan struct{} // closed after the first list
	once   sync.Once
	mu     sync.Mutex
	peers  map[string]time.Time // peer ID → last renewal seen
}

var _ peers.Registry = (*peerRegistry)(nil)

func newPeerRegistry(c client.Client, ns, id string, ttl, refresh time.Duration, log logr.Logger) *peerRegistry {
	return &peerRegistry{c: c, ns: ns, self: sharder.PeerInfo{ID: sanitize.DNS1123(id), Weight: 1},
		ttl: ttl, refresh: min(refresh, ttl/3), log: log.WithName("peers"),
		listed: make(chan struct{}), peers: map[string]time.Time{}}
}

// Self implements peers.Registry.
func (r *peerRegistry) Self() sharder.PeerInfo { return r.self }

// firstListWait bounds Snapshot's wait for the first list: the coordinator
// calls it from its loop, which must not hang on an unreachable apiserver
// (it then gets this replica alone, and the fences keep ownership single).
const firstListWait = 10 * time.Second

// Snapshot implements peers.Registry: the peers renewed within ttl, self
// included.
func (r *peerRegistry) Snapshot() []sharder.PeerInfo {
	select {
	case <-r.listed:
	case <-time.After(firstListWait):
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []sharder.PeerInfo{r.self}
	for id, renewed := range r.peers {
		if id != r.self.ID && now.Sub(renewed) < r.ttl {
			out = append(out, sharder.PeerInfo{ID: id, Weight: 1})
		}
	}
	return out
}

// Run implements peers.Registry: renew and list until ctx ends, then
// delete this replica's Lease.
func (r *peerRegistry) Run(ctx context.Context) error {
	renewEvery, sched := r.ttl/3, r.schedule()
	var lastRenew time.Time
	t := time.NewTicker(sched.tick)
	defer t.Stop()
	for {
		if r.renewDue(lastRenew, renewEvery) {
			if err := r.renew(ctx); err != nil && ctx.Err() == nil {
				r.log.V(1).Info("Renewing the peer Lease failed; retrying", "error", err.Error())
			} else {
				lastRenew = time.Now()
				sched.wrote(lastRenew)
			}
		}
		if now := time.Now(); sched.listDue(now) {
			sched.listing(now)
			if err := r.list(ctx); err != nil && ctx.Err() == nil {
				r.log.V(1).Info("Listing peer Leases failed; retrying", "error", err.Error())
			}
		}
		select {
		case <-ctx.Done():
			r.leave()
			return nil
		case <-t.C:
		}
	}
}

// schedule is when the registry writes and lists. Without a share: both
// every refresh, as multicluster-runtime's registry does. With one, the
// loop wakes every partTick, so that a write the FleetShare asks for (a
// lower claim, which lets the others raise, or a changed demand) goes out
// within one tick; it lists every listEvery and also ConfirmDelay after a
// write returned, the earliest list a raise may be applied on (the
// simulated 21/6/3 heal: 11.3 s on average with lists on the interval
// only, 11.1 s with this; one bucket: 10 s).
func (r *peerRegistry) schedule() *listSchedule {
	if r.share == nil {
		return &listSchedule{tick: r.refresh, every: r.refresh}
	}
	return &listSchedule{tick: partTick, every: min(r.refresh, r.share.listEvery), confirm: r.share.confirmDelay}
}

// listSchedule decides when the registry lists the peer Leases.
type listSchedule struct {
	tick, every, confirm time.Duration
	next, confirmAt      time.Time
}

// wrote: a write returned at t (a renewal that counts).
func (s *listSchedule) wrote(t time.Time) {
	if s.confirm > 0 {
		s.confirmAt = t.Add(s.confirm)
	}
}

// listDue: the interval is up, or a write's confirming list is due. Half
// a tick early, so that the ticker's phase does not stretch either.
func (s *listSchedule) listDue(now time.Time) bool {
	early := now.Add(s.tick / 2)
	return !early.Before(s.next) || (!s.confirmAt.IsZero() && !now.Before(s.confirmAt))
}

// listing: a list is sent at now.
func (s *listSchedule) listing(now time.Time) {
	s.next, s.confirmAt = now.Add(s.every), time.Time{}
}

func (r *peerRegistry) leaseName() string { return fmt.Sprintf("%s-%s", peerPrefix, r.self.ID) }

// renewDue: every renewEvery (less half a tick, so that the tick does
// not stretch it), or as the FleetShare says.
func (r *peerRegistry) renewDue(last time.Time, renewEvery time.Duration) bool {
	if r.share != nil {
		return r.share.due(time.Now())
	}
	return time.Since(last) >= renewEvery-r.refresh/2
}

// renew writes this replica's Lease; with share, the FleetShare learns
// the write's send and return times and whether it succeeded.
func (r *peerRegistry) renew(ctx context.Context) error {
	if r.share == nil {
		return r.write(ctx, nil)
	}
	sent := time.Now()
	ann := r.share.begin(sent)
	err := r.write(ctx, ann)
	r.share.end(sent, time.Now(), err == nil)
	r.log.V(1).Info("Peer Lease written", "demand", ann[limiter.DemandAnnotation], "claim", ann[limiter.ClaimAnnotation],
		"seconds", time.Since(sent).Seconds(), "ok", err == nil)
	return err
}

// write renews the Lease with ann. It updates the Lease it last wrote,
// one round trip, and reads it first only when it has none or the update
// conflicted (another writer, or a delete): a share write is on the path
// of every raise, and under a fleet heal's load each round trip to the
// management apiserver took a quarter to three quarters of a second.
func (r *peerRegistry) write(ctx context.Context, ann map[string]string) error {
	if r.written != nil {
		l := r.written.DeepCopy()
		err := r.update(ctx, l, ann)
		if err == nil || (!apierrors.IsConflict(err) && !apierrors.IsNotFound(err)) {
			return err
		}
	}
	var l coordv1.Lease
	err := r.c.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: r.leaseName()}, &l)
	if apierrors.IsNotFound(err) {
		l = coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: r.leaseName(),
			Labels: map[string]string{peerLabel: "true", peerPrefixLabel: peerPrefix}}}
	} else if err != nil {
		return err
	}
	return r.update(ctx, &l, ann)
}

// update writes l (created when new) with ann and a fresh renewal, and
// keeps what was written for the next write.
func (r *peerRegistry) update(ctx context.Context, l *coordv1.Lease, ann map[string]string) error {
	now := metav1.NowMicro()
	for k, v := range ann {
		metav1.SetMetaDataAnnotation(&l.ObjectMeta, k, v)
	}
	l.Spec.HolderIdentity = ptr.To(r.self.ID)
	l.Spec.RenewTime = &now
	l.Spec.LeaseDurationSeconds = ptr.To(int32(r.ttl / time.Second))
	var err error
	if l.ResourceVersion == "" {
		err = r.c.Create(ctx, l)
	} else {
		err = r.c.Update(ctx, l)
	}
	if err != nil {
		r.written = nil
		return err
	}
	r.written = l
	return nil
}

func (r *peerRegistry) list(ctx context.Context) error {
	sent := time.Now()
	var ls coordv1.LeaseList
	if err := r.c.List(ctx, &ls, client.InNamespace(r.ns),
		client.MatchingLabels{peerLabel: "true", peerPrefixLabel: peerPrefix}); err != nil {
		return err
	}
	seen := make(map[string]time.Time, len(ls.Items))
	var recs []limiter.PeerRecord
	for _, l := range ls.Items {
		if l.Spec.HolderIdentity == nil || l.Spec.RenewTime == nil || l.DeletionTimestamp != nil {
			continue
		}
		seen[*l.Spec.HolderIdentity] = l.Spec.RenewTime.Time
		if r.share != nil {
			// Every write changes the resourceVersion: the FleetShare
			// compares it for change, never a peer's clock.
			recs = append(recs, limiter.PeerRecord{ID: *l.Spec.HolderIdentity, Renewal: l.ResourceVersion,
				Published: limiter.ParsePublished(l.Annotations, r.share.total)})
		}
	}
	if r.share != nil {
		r.share.listed(sent, time.Now(), recs)
	}
	r.mu.Lock()
	r.peers = seen
	r.mu.Unlock()
	r.once.Do(func() { close(r.listed) })
	return nil
}

// leaveTimeout bounds the Lease delete on shutdown, which must not hold
// the process up: the Lease expires after ttl anyway.
const leaveTimeout = 2 * time.Second

func (r *peerRegistry) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), leaveTimeout)
	defer cancel()
	l := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: r.leaseName()}}
	if err := r.c.Delete(ctx, l); err != nil && !apierrors.IsNotFound(err) {
		r.log.V(1).Info("Deleting the peer Lease failed; it expires on its own", "error", err.Error())
	}
}
