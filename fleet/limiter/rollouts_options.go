package limiter

import (
	"errors"
	"time"
)

// Defaults for RolloutOptions, the only place they live.
const (
	// DefaultMaxConcurrentClusters lets four workload clusters roll at
	// once: a bad version or template reaches at most four clusters before
	// their failure pauses the wave, while a fleet of hundreds still
	// upgrades within hours (the Limiter paces each member restart anyway).
	DefaultMaxConcurrentClusters = 4
	// DefaultMaxFailedClusters pauses the wave at the first failed roll:
	// one cluster that cannot take the change is reason enough for a human
	// to look before the next one gets it.
	DefaultMaxFailedClusters = 0
	// DefaultRollStepTimeout is how long a roll may go without a member
	// more on its target before it counts as failed. One step is a member
	// restart (seconds to a minute: etcd start and catch-up), behind the
	// fleet's heals in the Limiter; fifteen minutes is a stuck step, not a
	// slow one, even after a fleet reboot's heals.
	DefaultRollStepTimeout = 15 * time.Minute
	// DefaultRollHoldTTL frees a place whose roll stopped asking (its
	// reconciler asks every few seconds): the cluster was deleted or
	// disengaged, or its manager went away. Shorter than the step timeout,
	// so a paused cluster, which does not ask, gives its place back rather
	// than failing.
	DefaultRollHoldTTL = 10 * time.Minute
	// DefaultRollQueueTTL drops a wait not asked for again in four times
	// DefaultRollMaxDelay.
	DefaultRollQueueTTL = time.Minute
	// DefaultRollMaxDelay is how long a waiting roll waits before it asks
	// again: a place frees when another cluster's roll ends, which takes
	// minutes, so a few seconds' delay costs nothing.
	DefaultRollMaxDelay = 15 * time.Second
)

// RolloutOptions configure Rollouts. Zero fields take the defaults above,
// MaxFailedClusters excepted (0 is its default); a negative one is 0.
type RolloutOptions struct {
	MaxConcurrentClusters int
	MaxFailedClusters     int
	StepTimeout           time.Duration
	HoldTTL               time.Duration
	QueueTTL              time.Duration
	MaxDelay              time.Duration
	// Now returns the current time; tests inject a fake clock.
	Now func() time.Time
}

func (o RolloutOptions) withDefaults() RolloutOptions {
	if o.MaxConcurrentClusters <= 0 {
		o.MaxConcurrentClusters = DefaultMaxConcurrentClusters
	}
	o.MaxFailedClusters = max(0, o.MaxFailedClusters)
	if o.StepTimeout <= 0 {
		o.StepTimeout = DefaultRollStepTimeout
	}
	if o.HoldTTL <= 0 {
		o.HoldTTL = DefaultRollHoldTTL
	}
	if o.QueueTTL <= 0 {
		o.QueueTTL = DefaultRollQueueTTL
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = DefaultRollMaxDelay
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// RolloutConfig is what a user sets of the fleet's rollout wave
// (Rollouts): how many workload clusters roll at once, and how many
// failed rolls pause it.
type RolloutConfig struct {
	MaxConcurrentClusters int           `mapstructure:"maxConcurrentClusters" flag:"rollout-max-concurrent-clusters" help:"Most workload clusters whose EtcdClusters roll at once (version upgrades, re-templates), fleet-wide; the others wait their turn (EtcdCluster Progressing says so). Heals never wait for it, and every member restart of a roll still goes through the limiter after the heals."`
	MaxFailedClusters     int           `mapstructure:"maxFailedClusters" flag:"rollout-max-failed-clusters" help:"Failed rolls (no member more on its target for rollout.stepTimeout) the wave tolerates; one more pauses it: no further cluster starts a roll until a failed one recovers or is paused. 0: the first failure pauses the wave."`
	StepTimeout           time.Duration `mapstructure:"stepTimeout" flag:"rollout-step-timeout" help:"How long a roll may go without a member more on its target before it counts as failed."`
}

// DefaultRolloutConfig holds the defaults above.
func DefaultRolloutConfig() RolloutConfig {
	return RolloutConfig{MaxConcurrentClusters: DefaultMaxConcurrentClusters, MaxFailedClusters: DefaultMaxFailedClusters,
		StepTimeout: DefaultRollStepTimeout}
}

// Validate refuses a wave that could never roll, naming the keys.
func (c RolloutConfig) Validate() error {
	if c.MaxConcurrentClusters < 1 || c.MaxFailedClusters < 0 || c.StepTimeout <= 0 {
		return errors.New("rollout.maxConcurrentClusters must be at least 1, rollout.maxFailedClusters at least 0 and rollout.stepTimeout > 0")
	}
	return nil
}

// Options are c's RolloutOptions.
func (c RolloutConfig) Options() RolloutOptions {
	return RolloutOptions{MaxConcurrentClusters: c.MaxConcurrentClusters, MaxFailedClusters: c.MaxFailedClusters, StepTimeout: c.StepTimeout}
}
