package limiter

import (
	"errors"

	"golang.org/x/time/rate"
)

// Config is what a user sets of the replacement limiter: the fleet-wide
// token bucket. Its tags give the manager's config key, flag and help
// (fleet/settings reads them), so a new setting is a field here, with its
// default in DefaultConfig.
type Config struct {
	Rate  float64 `mapstructure:"rate" flag:"limiter-rate" help:"Fleet-wide replacements per second (token bucket rate). Paces replacements; never halts them."`
	Burst int     `mapstructure:"burst" flag:"limiter-burst" help:"Fleet-wide replacement burst (token bucket size)."`
}

// DefaultConfig is DefaultRate and DefaultBurst.
func DefaultConfig() Config { return Config{Rate: float64(DefaultRate), Burst: DefaultBurst} }

// Validate refuses a bucket that would halt replacements, naming the
// manager's keys (limiter.*).
func (c Config) Validate() error {
	if c.Rate <= 0 || c.Burst < 1 {
		return errors.New("limiter.rate must be > 0 and limiter.burst at least 1 (the limiter paces; it cannot halt)")
	}
	return nil
}

// Options are c's Options; the caller adds the callbacks.
func (c Config) Options() Options { return Options{Rate: rate.Limit(c.Rate), Burst: c.Burst} }

// SlotsConfig is what a user sets of the snapshot slots (Slots): how many
// snapshot Jobs run and start fleet-wide, and how many one workload
// cluster and one namespace in it may run at once.
type SlotsConfig struct {
	MaxConcurrent   int     `mapstructure:"maxConcurrent" flag:"snapshots-max-concurrent" help:"Most EtcdSnapshot Jobs running at once, fleet-wide; a snapshot waiting for a slot stays Pending (Ready=False, WaitingForSlot, the message saying which limit or cap holds it). Apart from the replacement limiter: backups never delay a replacement."`
	StartsPerMinute float64 `mapstructure:"startsPerMinute" flag:"snapshots-starts-per-minute" help:"Most EtcdSnapshot Jobs started per minute, fleet-wide, evenly spaced, so that schedules firing at the same moment across the fleet start one by one."`
	MaxPerCluster   int     `mapstructure:"maxPerCluster" flag:"snapshots-max-per-cluster" help:"Most EtcdSnapshot Jobs one workload cluster runs at once. A slot is held until its Job ends, so this keeps a cluster whose object store is slow or a tarpit to this many slots while the rest of the fleet keeps the others; its other snapshots wait (WaitingForSlot) without holding up other clusters'."`
	MaxPerNamespace int     `mapstructure:"maxPerNamespace" flag:"snapshots-max-per-namespace" help:"Most EtcdSnapshot Jobs one namespace of a workload cluster runs at once (a namespace names its own endpoint and credentials); it binds only once maxPerCluster is raised above it."`
}

// DefaultSlotsConfig is DefaultMaxConcurrentSnapshots,
// DefaultSnapshotStartsPerMinute, DefaultMaxSnapshotsPerCluster and
// DefaultMaxSnapshotsPerNamespace.
func DefaultSlotsConfig() SlotsConfig {
	return SlotsConfig{MaxConcurrent: DefaultMaxConcurrentSnapshots, StartsPerMinute: DefaultSnapshotStartsPerMinute,
		MaxPerCluster: DefaultMaxSnapshotsPerCluster, MaxPerNamespace: DefaultMaxSnapshotsPerNamespace}
}

// Validate refuses pacing that would halt backups, naming the manager's
// keys (snapshots.*).
func (c SlotsConfig) Validate() error {
	if c.MaxConcurrent < 1 || c.StartsPerMinute <= 0 {
		return errors.New("snapshots.maxConcurrent must be at least 1 and snapshots.startsPerMinute > 0 (pacing never halts backups)")
	}
	if c.MaxPerCluster < 1 || c.MaxPerNamespace < 1 {
		return errors.New("snapshots.maxPerCluster and snapshots.maxPerNamespace must be at least 1 (a cap of 0 would halt a cluster's backups)")
	}
	return nil
}

// Options are c's SlotOptions; the caller adds the callbacks.
func (c SlotsConfig) Options() SlotOptions {
	return SlotOptions{MaxConcurrent: c.MaxConcurrent, StartsPerMinute: c.StartsPerMinute,
		MaxPerCluster: c.MaxPerCluster, MaxPerNamespace: c.MaxPerNamespace}
}
