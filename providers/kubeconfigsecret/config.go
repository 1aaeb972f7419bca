package kubeconfigsecret

import (
	"errors"
	"fmt"
	"time"
)

// ClusterConfig is what a user sets of how workload clusters are reached
// and probed: the part of Options that is configuration rather than
// wiring. Its tags give the manager's config key, flag and help
// (fleet/settings reads them), so a new setting is a field here, with its
// default in DefaultClusterConfig, and a line in Apply.
type ClusterConfig struct {
	QPS                   float64       `mapstructure:"qps" flag:"cluster-qps" help:"Client QPS towards each workload apiserver."`
	Burst                 int           `mapstructure:"burst" flag:"cluster-burst" help:"Client burst towards each workload apiserver."`
	PreflightTimeout      time.Duration `mapstructure:"preflightTimeout" flag:"cluster-preflight-timeout" help:"Time allowed to check a workload cluster (discovery and access) before engaging it."`
	ProbeInterval         time.Duration `mapstructure:"probeInterval" flag:"cluster-probe-interval" help:"How often each engaged workload cluster is probed."`
	ProbeTimeout          time.Duration `mapstructure:"probeTimeout" flag:"cluster-probe-timeout" help:"Timeout of one probe."`
	FailureThreshold      int           `mapstructure:"failureThreshold" flag:"cluster-failure-threshold" help:"Consecutive failed probes before a cluster is marked disconnected and re-engaged."`
	MaxConcurrentConnects int           `mapstructure:"maxConcurrentConnects" flag:"cluster-max-concurrent-connects" help:"Connection attempts (pre-flight, cache sync, engage) run at once across every workload cluster; the others wait their turn, so a manager that starts with many clusters registered does not send them all at once."`
}

// DefaultClusterConfig is the Default* values of these fields.
func DefaultClusterConfig() ClusterConfig {
	return ClusterConfig{QPS: DefaultQPS, Burst: DefaultBurst, PreflightTimeout: DefaultPreflightTimeout,
		ProbeInterval: DefaultProbeInterval, ProbeTimeout: DefaultProbeTimeout, FailureThreshold: DefaultFailureThreshold,
		MaxConcurrentConnects: DefaultMaxConcurrentConnects}
}

// Validate refuses values the provider cannot run with, naming the
// manager's keys (clusters.*). Zero would mean "the default" to Options,
// which is not what a user who wrote 0 asked for.
func (c ClusterConfig) Validate() error {
	var errs []error
	if c.FailureThreshold < 1 || c.QPS <= 0 || c.Burst < 1 || c.MaxConcurrentConnects < 1 {
		errs = append(errs, errors.New("clusters.failureThreshold, clusters.burst and clusters.maxConcurrentConnects must be at least 1 and clusters.qps > 0"))
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"clusters.preflightTimeout", c.PreflightTimeout}, {"clusters.probeInterval", c.ProbeInterval}, {"clusters.probeTimeout", c.ProbeTimeout}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be > 0, got %s", d.key, d.v))
		}
	}
	if c.ProbeTimeout >= c.ProbeInterval {
		errs = append(errs, errors.New("clusters.probeTimeout must be shorter than clusters.probeInterval"))
	}
	return errors.Join(errs...)
}

// Apply sets c's fields of o.
func (c ClusterConfig) Apply(o *Options) {
	o.QPS, o.Burst = float32(c.QPS), c.Burst
	o.PreflightTimeout, o.ProbeInterval, o.ProbeTimeout = c.PreflightTimeout, c.ProbeInterval, c.ProbeTimeout
	o.FailureThreshold, o.MaxConcurrentConnects = c.FailureThreshold, c.MaxConcurrentConnects
}
