package app

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/etcdfleet/etcdfleet/fleet/dashboard"
	"github.com/etcdfleet/etcdfleet/fleet/limiter"
	"github.com/etcdfleet/etcdfleet/fleet/settings"
)

// fenceRetry is the coordinator's pause after failing to take a fence
// (multicluster-runtime's default): long enough not to hammer the
// apiserver, short against the sync interval.
const fenceRetry = 750 * time.Millisecond

// sharding is the sharded mode's state: the coordinator that decides which
// clusters this replica owns, and this replica's ID in its Leases.
type sharding struct {
	coord   *sharded.Coordinator
	replica string
	share   *shareLink
	// quiesce stops this replica's requests to a cluster and waits for
	// those in flight (the provider's Quiesce); set before the manager
	// starts, and called before each fence release (quiescingReleases).
	quiesce func(ctx context.Context, cluster string) error
}

// newSharding builds multicluster-runtime's sharded coordinator for the
// provider's Options.Ownership: HRW over the replicas of peerRegistry, one
// fence Lease mcr-shard-<cluster> per cluster in the registration
// namespace, renewed every third of sharding.leaseDuration. It gets a
// client of its own, uncached, since Leases are read and written once per
// renewal and a cache would watch every Lease of the namespace.
func newSharding(restCfg *rest.Config, c settings.Config) (*sharding, error) {
	if !c.Sharding.Enabled {
		return nil, nil
	}
	raw, err := client.NewWithWatch(restCfg, client.Options{Scheme: Scheme()})
	if err != nil {
		return nil, fmt.Errorf("sharding: %w", err)
	}
	sh := &sharding{}
	cli := quiescingReleases(raw, c.Namespace, fencePrefix+"-", func(ctx context.Context, cluster string) error {
		return sh.quiesce(ctx, cluster)
	})
	id, err := replicaID(c)
	if err != nil {
		return nil, err
	}
	log := ctrl.Log.WithName("sharding")
	d, every := c.Sharding.LeaseDuration, c.Sharding.SyncInterval
	reg := newPeerRegistry(cli, c.Namespace, id, d, every, log)
	reg.share = newShareLink(reg.Self().ID, limiter.ShareOptions{
		Rate: rate.Limit(c.Limiter.Rate), Burst: c.Limiter.Burst,
		LeaseDuration: d, ListInterval: min(every, shareListInterval)})
	coord := sharded.New(cli, log, sharded.WithPeerRegistry(reg),
		sharded.WithShardLease(c.Namespace, fencePrefix),
		sharded.WithLeaseTimings(d, d/3, fenceRetry),
		// Rehash is unused by the HRW sharder at v0.24.1.
		sharded.WithSynchronizationIntervals(every, 3*every))
	sh.coord, sh.replica, sh.share = coord, reg.Self().ID, reg.share
	sh.quiesce = func(context.Context, string) error { return nil } // until the provider exists
	return sh, nil
}

// shareListInterval is how often the peer Leases are listed in sharded
// mode, so that the limiter's parts follow demand within a second: two
// Lists of a handful of Leases per replica per second, a third after each
// Lease write (ConfirmDelay after it returned, where a raise is applied),
// and a Lease write on a changed claim or demand at most as often. Lists
// at 250 ms gained the simulated 21/6/3 heal over three replicas nothing
// more once a write is followed by its own list (11.1 s on average either
// way; one bucket: 10 s).
const shareListInterval = 500 * time.Millisecond

// shareLink holds this replica's limiter.FleetShare, which is not safe
// for concurrent use, between the peer registry, which feeds it the Lease
// traffic, and the share keeper, which applies its parts.
type shareLink struct {
	mu        sync.Mutex
	fs        *limiter.FleetShare
	total     limiter.Part // a malformed claim reads as this
	listEvery time.Duration
	// confirmDelay: a raise is applied on a list sent this long after its
	// claim's write returned, so the registry lists then.
	confirmDelay time.Duration
}

func newShareLink(self string, o limiter.ShareOptions) *shareLink {
	fs := limiter.NewFleetShare(self, o)
	o = fs.Options()
	return &shareLink{fs: fs, listEvery: o.ListInterval, confirmDelay: o.ConfirmDelay,
		total: limiter.Part{Burst: o.Burst, Rate: float64(o.Rate)}}
}

func (s *shareLink) due(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fs.Due(now)
}

// begin returns the annotations of the write about to be sent.
func (s *shareLink) begin(now time.Time) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fs.BeginWrite(now).Annotations()
}

func (s *shareLink) end(sent, done time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fs.EndWrite(sent, done, ok)
}

func (s *shareLink) listed(sent, done time.Time, recs []limiter.PeerRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fs.Listed(sent, done, recs)
}

func (s *shareLink) next(now time.Time, d limiter.Demand) limiter.Part {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fs.Next(now, d)
}

// shareKeeper splits the limiter and the snapshot slots across replicas.
// It counts the clusters engaged here (an Aware of the multicluster
// manager, so it sees exactly what the reconcilers can act on). The
// snapshot slots take their share by that count over the registered
// clusters whenever either changes; the limiter's part follows demand
// (limiter.FleetShare): every partTick the keeper passes the limiter's
// waiting requests and the count to the FleetShare and applies the part
// it returns. The tick bounds how late a fenced replica stops granting,
// well within the margin the FleetShare leaves for it.
type shareKeeper struct {
	f  *Fleet
	mu sync.Mutex
	n  int
}

var _ multicluster.Aware = (*shareKeeper)(nil)

// Engage implements multicluster.Aware; the count drops as soon as the
// engagement ends, before another replica can take the fence.
func (k *shareKeeper) Engage(ctx context.Context, _ multicluster.ClusterName, _ cluster.Cluster) error {
	k.add(1)
	context.AfterFunc(ctx, func() { k.add(-1) })
	return nil
}

func (k *shareKeeper) add(d int) {
	k.mu.Lock()
	k.n += d
	k.mu.Unlock()
	k.update()
}

// update sets the snapshot slots' share from the current counts.
func (k *shareKeeper) update() {
	k.mu.Lock()
	defer k.mu.Unlock()
	total := len(k.f.Provider.States())
	k.f.Snapshots.SetShare(min(k.n, total), total)
	k.f.Rollouts.SetShare(min(k.n, total), total)
}

// partTick is how often the limiter's part is recomputed.
const partTick = 100 * time.Millisecond

// Start implements manager.Runnable: it applies the FleetShare's part
// every partTick, and none once stopped.
func (k *shareKeeper) Start(ctx context.Context) error {
	t := time.NewTicker(partTick)
	defer t.Stop()
	log := ctrl.Log.WithName("sharding")
	var last limiter.Part
	for {
		select {
		case <-ctx.Done():
			k.f.Limiter.SetPart(limiter.Part{})
			return nil
		case <-t.C:
		}
		d := k.f.Limiter.Demand()
		k.mu.Lock()
		d.Owned = k.n
		k.mu.Unlock()
		p := k.f.sharding.share.next(time.Now(), d)
		if p != last {
			log.V(1).Info("Limiter part changed", "burst", p.Burst, "rate", p.Rate,
				"waitingQuorumLost", d.Lost, "waitingOther", d.Other, "owned", d.Owned)
			last = p
		}
		k.f.Limiter.SetPart(p)
	}
}

// NeedLeaderElection: every replica keeps its own share.
func (k *shareKeeper) NeedLeaderElection() bool { return false }

// controllerManager is the manager the reconcilers are built on: in
// sharded mode one that adds them to run on every replica. mcr's
// controllers (v0.24.1) embed controller.TypedController, an interface
// without NeedLeaderElection, so controller.Options.NeedLeaderElection
// never reaches the manager and they would run on the leader only.
func (f *Fleet) controllerManager() mcmanager.Manager {
	if f.sharding == nil {
		return f.Manager
	}
	return unelectedManager{f.Manager}
}

// unelectedManager adds every runnable to run without leader election.
type unelectedManager struct{ mcmanager.Manager }

func (m unelectedManager) Add(r mcmanager.Runnable) error { return m.Manager.Add(unelectedAware{r}) }

// unelectedAware is a multicluster runnable run on every replica.
type unelectedAware struct{ mcmanager.Runnable }

func (unelectedAware) NeedLeaderElection() bool { return false }

// unelected runs a runnable on every replica, leader or not.
type unelected struct{ manager.Runnable }

func (unelected) NeedLeaderElection() bool { return false }

// addSharded adds what sharded mode adds to the manager: the share keeper,
// starting from no part (nothing is granted before the FleetShare's first
// Lease write), and the limiter on every replica.
func (f *Fleet) addSharded() error {
	k := &shareKeeper{f: f}
	f.shares = k
	f.Limiter.SetPart(limiter.Part{})
	f.Snapshots.SetShare(0, 1)
	f.Rollouts.SetShare(0, 1)
	if err := f.Manager.Add(k); err != nil {
		return err
	}
	return f.Manager.GetLocalManager().Add(unelected{f.Limiter})
}

// ownerOf adds to a cluster's dashboard info which replica owns it.
func (f *Fleet) ownerOf(ci dashboard.ClusterInfo, owned bool) dashboard.ClusterInfo {
	if f.sharding == nil {
		return ci
	}
	if owned {
		ci.Replica = f.sharding.replica
	}
	ci.OwnedElsewhere = !owned
	return ci
}

// onChange is the provider's OnChange: the dashboard, and in sharded mode
// the share, whose total is the registered clusters.
func (f *Fleet) onChange(name string) {
	f.notify(name)
	if f.shares != nil {
		f.shares.update()
	}
}
