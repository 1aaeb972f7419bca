package dashboard

import (
	"errors"
	"fmt"
	"time"
)

// Config is what a user sets of the Writer: how often status is written.
// Its tags give the manager's config key, flag and help (fleet/settings
// reads them), so a new setting is a field here, with its default in
// DefaultConfig.
type Config struct {
	MinInterval time.Duration `mapstructure:"minInterval" flag:"dashboard-min-interval" help:"Least time between two status writes of one FleetCluster or the Fleet."`
	Resync      time.Duration `mapstructure:"resync" flag:"dashboard-resync" help:"How often the dashboard is recomputed without a trigger."`
	// ProbeRefresh is Options.ProbeRefresh: probes every few seconds must
	// not rewrite every FleetCluster.
	ProbeRefresh time.Duration `mapstructure:"probeRefresh" flag:"dashboard-probe-refresh" help:"How stale a FleetCluster's stored lastProbeTime may get before a probe alone rewrites it."`
}

// DefaultConfig is DefaultMinInterval and DefaultResync.
func DefaultConfig() Config {
	return Config{MinInterval: DefaultMinInterval, Resync: DefaultResync, ProbeRefresh: DefaultProbeRefresh}
}

// Validate refuses intervals of zero or less, naming the manager's keys
// (dashboard.*): zero would mean "the default" to Options, which is not
// what a user who wrote 0 asked for.
func (c Config) Validate() error {
	var errs []error
	if c.MinInterval <= 0 {
		errs = append(errs, fmt.Errorf("dashboard.minInterval must be > 0, got %s", c.MinInterval))
	}
	if c.Resync <= 0 {
		errs = append(errs, fmt.Errorf("dashboard.resync must be > 0, got %s", c.Resync))
	}
	return errors.Join(errs...)
}

// Apply sets c's fields of o.
func (c Config) Apply(o *Options) {
	o.MinInterval, o.Resync, o.ProbeRefresh = c.MinInterval, c.Resync, c.ProbeRefresh
}
