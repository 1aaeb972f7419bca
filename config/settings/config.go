package settings

import (
	"time"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/dashboard"
	"github.com/etcdfleet/etcdfleet/fleet/limiter"
	"github.com/etcdfleet/etcdfleet/memberctl/datadirguard"
	"github.com/etcdfleet/etcdfleet/memberctl/operator"
	"github.com/etcdfleet/etcdfleet/memberctl/replacement"
	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
)

// EtcdAccessModes are the values of Config.EtcdAccess, memberctl's
// operator.Access modes: port-forward (WebSockets through each workload
// apiserver), port-forward-spdy (the same over SPDY) and direct (Pod IPs).
var EtcdAccessModes = []string{string(operator.PortForward), string(operator.PortForwardSPDY), string(operator.Direct)}

// Config holds every manager setting.
type Config struct {
	// Namespace holds the kubeconfig Secrets that register workload clusters.
	Namespace string `mapstructure:"namespace"`
	// EtcdAccess is how etcd members are reached: one of EtcdAccessModes.
	EtcdAccess string `mapstructure:"etcdAccess"`
	// Workers is MaxConcurrentReconciles of each controller, fleet-wide.
	Workers int `mapstructure:"workers"`
	// WorkersPerCluster caps one workload cluster's reconciles in flight
	// per controller, so that a hung cluster cannot take every worker.
	WorkersPerCluster int `mapstructure:"workersPerCluster"`
	// ReconcileTimeout ends each reconcile's context after this long.
	ReconcileTimeout time.Duration `mapstructure:"reconcileTimeout"`

	Limiter     LimiterConfig     `mapstructure:"limiter"`
	Snapshots   SnapshotsConfig   `mapstructure:"snapshots"`
	Replacement ReplacementConfig `mapstructure:"replacement"`
	Clusters    ClustersConfig    `mapstructure:"clusters"`
	Dashboard   DashboardConfig   `mapstructure:"dashboard"`
	Sharding    ShardingConfig    `mapstructure:"sharding"`

	MetricsBindAddress string `mapstructure:"metricsBindAddress"`
	// MetricsSecure serves /metrics over HTTPS with authentication and
	// authorization; MetricsCertDir holds its certificate ("" self-signed).
	MetricsSecure          bool   `mapstructure:"metricsSecure"`
	MetricsCertDir         string `mapstructure:"metricsCertDir"`
	HealthProbeBindAddress string `mapstructure:"healthProbeBindAddress"`
	LeaderElection         bool   `mapstructure:"leaderElection"`
	LeaderElectionID       string `mapstructure:"leaderElectionID"`
	// EnsureWorkloadCRDs installs the etcd.etcdfleet.io CRDs in each
	// workload cluster before engaging it; needs CRD write permission there.
	EnsureWorkloadCRDs bool `mapstructure:"ensureWorkloadCRDs"`
	// AllowUnconstrained engages workload clusters whose admission does
	// not constrain the credentials (kubeconfigsecret
	// Options.AllowUnconstrained).
	AllowUnconstrained bool `mapstructure:"allowUnconstrained"`
	// AgentImage runs etcdfleet-agent in workload Pods: the data-dir guard
	// of memory-backed members.
	AgentImage string `mapstructure:"agentImage"`
}

// LimiterConfig is the fleet-wide replacement rate limiter.
type LimiterConfig struct {
	Rate  float64 `mapstructure:"rate"`
	Burst int     `mapstructure:"burst"`
}

// SnapshotsConfig paces snapshot starts fleet-wide (limiter.Slots),
// apart from the replacement limiter.
type SnapshotsConfig struct {
	MaxConcurrent   int     `mapstructure:"maxConcurrent"`
	StartsPerMinute float64 `mapstructure:"startsPerMinute"`
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
	RequestTimeout   time.Duration `mapstructure:"requestTimeout"`
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

// ShardingConfig spreads the workload clusters over the manager's replicas
// with multicluster-runtime's sharded coordinator (see fleet/app).
type ShardingConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// ReplicaID names this replica in the peer and fence Leases; empty
	// takes the host name (the Pod's name).
	ReplicaID string `mapstructure:"replicaID"`
	// LeaseDuration of the per-cluster fence Leases; they are renewed
	// every third of it.
	LeaseDuration time.Duration `mapstructure:"leaseDuration"`
	// SyncInterval is how often ownership is recomputed.
	SyncInterval time.Duration `mapstructure:"syncInterval"`
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

// Default returns the defaults. Those of the limiter, the replacement
// policy, the workload clients and the dashboard are the packages' own
// (their Default* values), so there is one place for each; the rest are the
// manager's.
func Default() Config {
	policy := replacement.DefaultPolicy()
	return Config{
		Namespace:  fleetv1.DefaultRegistrationNamespace,
		EtcdAccess: string(operator.PortForward),
		Workers:    8,
		// The isolation of clusters from each other is memberctl/operator's.
		WorkersPerCluster: operator.DefaultWorkersPerCluster,
		ReconcileTimeout:  operator.DefaultReconcileTimeout,
		Limiter:           LimiterConfig{Rate: float64(limiter.DefaultRate), Burst: limiter.DefaultBurst},
		Snapshots: SnapshotsConfig{MaxConcurrent: limiter.DefaultMaxConcurrentSnapshots,
			StartsPerMinute: limiter.DefaultSnapshotStartsPerMinute},
		Replacement: ReplacementConfig{InitialBackoff: policy.InitialBackoff, MaxBackoff: policy.MaxBackoff,
			Cap: int(policy.Cap), Window: policy.Window, HealthyReset: policy.HealthyReset},
		Clusters: ClustersConfig{QPS: kubeconfigsecret.DefaultQPS, Burst: kubeconfigsecret.DefaultBurst,
			RequestTimeout:   operator.DefaultRequestTimeout,
			PreflightTimeout: kubeconfigsecret.DefaultPreflightTimeout, ProbeInterval: kubeconfigsecret.DefaultProbeInterval,
			ProbeTimeout: kubeconfigsecret.DefaultProbeTimeout, FailureThreshold: kubeconfigsecret.DefaultFailureThreshold},
		Dashboard:              DashboardConfig{MinInterval: dashboard.DefaultMinInterval, Resync: dashboard.DefaultResync},
		Sharding:               ShardingConfig{LeaseDuration: DefaultShardLeaseDuration, SyncInterval: DefaultShardSyncInterval},
		MetricsBindAddress:     ":8080",
		MetricsSecure:          true,
		HealthProbeBindAddress: ":8081",
		LeaderElection:         true,
		LeaderElectionID:       "etcdfleet-manager",
		AgentImage:             datadirguard.DefaultImage,
	}
}
