package settings

import (
	"fmt"
	"time"
)

// Sharding spreads the workload clusters over the manager's replicas with
// multicluster-runtime's sharded coordinator (see fleet/app, shard.go).
type Sharding struct {
	Enabled bool `mapstructure:"enabled" flag:"shard" help:"Spread the workload clusters over every manager replica (multicluster-runtime's sharded coordinator: rendezvous hashing over live peers, one fence Lease per cluster). Each replica connects only to the clusters it owns; the fleet limiter is split by share (see fleet/limiter). The leader still writes the Fleet."`
	// ReplicaID names this replica in the peer and fence Leases; empty
	// takes the host name (the Pod's name).
	ReplicaID string `mapstructure:"replicaID" flag:"shard-replica-id" help:"This replica's name in the peer and fence Leases (mcr-peer-*, mcr-shard-*); empty takes the host name, which is the Pod's name. Must be unique per replica."`
	// LeaseDuration of the per-cluster fence Leases; they are renewed
	// every third of it.
	LeaseDuration time.Duration `mapstructure:"leaseDuration" flag:"shard-lease-duration" help:"Duration of each cluster's fence Lease, renewed every third of it: a dead replica's clusters are taken over after it, plus a sync interval."`
	SyncInterval  time.Duration `mapstructure:"syncInterval" flag:"shard-sync-interval" help:"How often each replica recomputes which clusters it owns."`
}

// Sharding defaults. They are the manager's own: multicluster-runtime's
// (20s fences, 5s sync) are options of its coordinator, not exported.
const (
	// DefaultShardLeaseDuration: a dead replica's clusters are taken over
	// within this (plus a sync), and a live one renews every third of it.
	DefaultShardLeaseDuration = 15 * time.Second
	// DefaultShardSyncInterval is how often each replica recomputes which
	// clusters it owns; a takeover waits for the next one.
	DefaultShardSyncInterval = 5 * time.Second
)

// DefaultSharding is off, with the default timings.
func DefaultSharding() Sharding {
	return Sharding{LeaseDuration: DefaultShardLeaseDuration, SyncInterval: DefaultShardSyncInterval}
}

// Validate refuses fences too short to renew. Durations of zero or less
// are refused for every setting by Config.Validate.
func (s Sharding) Validate() error {
	if s.Enabled && s.LeaseDuration < 3*time.Second {
		// Fences are renewed every third of it, and Lease durations are
		// whole seconds.
		return fmt.Errorf("sharding.leaseDuration must be at least 3s, got %s", s.LeaseDuration)
	}
	return nil
}
