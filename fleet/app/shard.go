package app

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/manager/coordinator/sharded"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/etcdfleet/etcdfleet/fleet/dashboard"
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
	cli, err := client.New(restCfg, client.Options{Scheme: Scheme()})
	if err != nil {
		return nil, fmt.Errorf("sharding: %w", err)
	}
	id := c.Sharding.ReplicaID
	if id == "" {
		if id, err = os.Hostname(); err != nil || id == "" {
			return nil, fmt.Errorf("sharding: no sharding.replicaID and no host name: %v", err)
		}
	}
	log := ctrl.Log.WithName("sharding")
	d, every := c.Sharding.LeaseDuration, c.Sharding.SyncInterval
	reg := newPeerRegistry(cli, c.Namespace, id, d, every, log)
	coord := sharded.New(cli, log, sharded.WithPeerRegistry(reg),
		sharded.WithShardLease(c.Namespace, fencePrefix),
		sharded.WithLeaseTimings(d, d/3, fenceRetry),
		// Rehash is unused by the HRW sharder at v0.24.1.
		sharded.WithSynchronizationIntervals(every, 3*every))
	return &sharding{coord: coord, replica: reg.Self().ID}, nil
}

// shareKeeper splits the limiter by share: it counts the clusters engaged
// here (an Aware of the multicluster manager, so it sees exactly what the
// reconcilers can act on) and sets the limiter's share to them over the
// registered clusters whenever either changes.
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

// update sets the limiter's share from the current counts.
func (k *shareKeeper) update() {
	k.mu.Lock()
	defer k.mu.Unlock()
	total := len(k.f.Provider.States())
	k.f.Limiter.SetShare(min(k.n, total), total)
	k.f.Snapshots.SetShare(min(k.n, total), total)
}

// Start implements manager.Runnable: the keeper only reacts.
func (k *shareKeeper) Start(ctx context.Context) error {
	<-ctx.Done()
	return nil
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
// starting from no share (a replica owns nothing until it engages), and
// the limiter on every replica.
func (f *Fleet) addSharded() error {
	k := &shareKeeper{f: f}
	f.shares = k
	f.Limiter.SetShare(0, 1)
	f.Snapshots.SetShare(0, 1)
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
