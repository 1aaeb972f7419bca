package settings

import (
	"time"
)

// EtcdAccessModes are the values of Config.EtcdAccess, as memberctl's
// operator.Access spells them: port-forward (WebSockets through each
// workload apiserver), port-forward-spdy (the same over SPDY) and direct
// (Pod IPs).
var EtcdAccessModes = []string{"port-forward", "port-forward-spdy", "direct"}

// Config holds every manager setting.
type Config struct {
	// Namespace holds the kubeconfig Secrets that register workload clusters.
	Namespace string `mapstructure:"namespace"`
	// EtcdAccess is how etcd members are reached: one of EtcdAccessModes.
	EtcdAccess string `mapstructure:"etcdAccess"`
	// Workers is MaxConcurrentReconciles of each controller, fleet-wide.
	Workers int `mapstructure:"workers"`

	Limiter     LimiterConfig     `mapstructure:"limiter"`
	Replacement ReplacementConfig `mapstructure:"replacement"`
	Clusters    ClustersConfig    `mapstructure:"clusters"`
	Dashboard   DashboardConfig   `mapstructure:"dashboard"`

	MetricsBindAddress     string `mapstructure:"metricsBindAddress"`
	HealthProbeBindAddress string `mapstructure:"healthProbeBindAddress"`
	LeaderElection         bool   `mapstructure:"leaderElection"`
	LeaderElectionID       string `mapstructure:"leaderElectionID"`
	// EnsureWorkloadCRDs installs the EtcdCluster/EtcdMember CRDs in each
	// workload cluster before engaging it; needs CRD write permission there.
	EnsureWorkloadCRDs bool `mapstructure:"ensureWorkloadCRDs"`
}

// LimiterConfig is the fleet-wide replacement rate limiter.
type LimiterConfig struct {
	Rate  float64 `mapstructure:"rate"`
	Burst int     `mapstructure:"burst"`
}

// ReplacementConfig is the per-member replacement policy.
type ReplacementConfig struct {
	InitialBackoff time.Duration `mapstructure:"initialBackoff"`
	MaxBackoff     time.Duration `mapstructure:"maxBackoff"`
	Cap            int           `mapstructure:"cap"`
	Window         time.Duration `mapstructure:"window"`
	HealthyReset   time.Duration `mapstructure:"healthyReset"`
}

// ClustersConfig is how workload clusters are reached and probed.
type ClustersConfig struct {
	QPS              float64       `mapstructure:"qps"`
	Burst            int           `mapstructure:"burst"`
	PreflightTimeout time.Duration `mapstructure:"preflightTimeout"`
	ProbeInterval    time.Duration `mapstructure:"probeInterval"`
	ProbeTimeout     time.Duration `mapstructure:"probeTimeout"`
	FailureThreshold int           `mapstructure:"failureThreshold"`
}

// DashboardConfig is how the FleetCluster and Fleet status is written.
type DashboardConfig struct {
	MinInterval time.Duration `mapstructure:"minInterval"`
	Resync      time.Duration `mapstructure:"resync"`
}

// Default returns the defaults: the one place they live.
func Default() Config {
	return Config{
		Namespace:  "etcdfleet-system",
		EtcdAccess: "port-forward",
		Workers:    8,
		Limiter:    LimiterConfig{Rate: 2, Burst: 10},
		Replacement: ReplacementConfig{InitialBackoff: time.Second, MaxBackoff: 5 * time.Minute, Cap: 5,
			Window: time.Hour, HealthyReset: 10 * time.Minute},
		Clusters: ClustersConfig{QPS: 50, Burst: 100, PreflightTimeout: 10 * time.Second,
			ProbeInterval: 10 * time.Second, ProbeTimeout: 5 * time.Second, FailureThreshold: 5},
		Dashboard:              DashboardConfig{MinInterval: 2 * time.Second, Resync: 10 * time.Second},
		MetricsBindAddress:     ":8080",
		HealthProbeBindAddress: ":8081",
		LeaderElection:         true,
		LeaderElectionID:       "etcdfleet-manager",
	}
}
