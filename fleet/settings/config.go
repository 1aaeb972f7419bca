package settings

import (
	"time"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/dashboard"
	"github.com/etcdfleet/etcdfleet/fleet/limiter"
	"github.com/etcdfleet/etcdfleet/memberctl/datadirguard"
	"github.com/etcdfleet/etcdfleet/memberctl/operator"
	"github.com/etcdfleet/etcdfleet/memberctl/replacement"
	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
)

// EtcdAccessModes are the values of Config.EtcdAccess, memberctl's
// operator.Access modes: port-forward (WebSockets through each workload
// apiserver), port-forward-spdy (the same over SPDY) and direct (Pod IPs).
var EtcdAccessModes = []string{string(operator.PortForward), string(operator.PortForwardSPDY), string(operator.Direct)}

// Config holds every manager setting. A field is a setting when it has a
// flag tag; a struct field with a mapstructure name is a section (its
// keys are nested under the name), and one with ",squash" adds its fields
// at this level. The order of the fields is the order of the docs.
type Config struct {
	Namespace  string `mapstructure:"namespace" flag:"namespace" help:"Namespace of the kubeconfig Secrets that register workload clusters (label etcdfleet.io/cluster-kubeconfig=true, key kubeconfig)."`
	EtcdAccess string `mapstructure:"etcdAccess" flag:"etcd-access" help:"How etcd members are reached: port-forward (WebSockets through each workload apiserver; works from outside), port-forward-spdy (the same over SPDY, for paths that block WebSocket upgrades; about 0.8 MiB more per member) or direct (Pod IPs; needs the Pod network)."`
	// Workers is MaxConcurrentReconciles of each controller, fleet-wide.
	Workers int `mapstructure:"workers" flag:"workers" help:"Concurrent reconciles per controller, shared by the whole fleet."`
	// WorkersPerCluster caps one workload cluster's reconciles in flight
	// per controller, so that a hung cluster cannot take every worker.
	WorkersPerCluster int           `mapstructure:"workersPerCluster" flag:"workers-per-cluster" help:"Most reconciles of one workload cluster in flight at once, per controller. Below workers, a cluster whose apiserver hangs never holds more than this many workers and the rest of the fleet keeps the others; equal to workers: no cap."`
	ReconcileTimeout  time.Duration `mapstructure:"reconcileTimeout" flag:"reconcile-timeout" help:"Longest one reconcile may run; its context then ends and it is retried with backoff. Bounds how long a cluster that stopped answering holds a worker."`

	Limiter   limiter.Config      `mapstructure:"limiter"`
	Snapshots limiter.SlotsConfig `mapstructure:"snapshots"`
	// SnapshotAgent are the limits of the snapshot agent's transfers,
	// passed into every snapshot, check and cleanup Job.
	SnapshotAgent agent.S3Limits        `mapstructure:"snapshotAgent"`
	Rollout       limiter.RolloutConfig `mapstructure:"rollout"`
	Replacement   replacement.Policy    `mapstructure:"replacement"`
	Clusters      ClustersConfig        `mapstructure:"clusters"`
	Dashboard     dashboard.Config      `mapstructure:"dashboard"`

	Metrics                `mapstructure:",squash"`
	HealthProbeBindAddress string `mapstructure:"healthProbeBindAddress" flag:"health-probe-bind-address" help:"Address of the /healthz and /readyz endpoints."`
	LeaderElection         bool   `mapstructure:"leaderElection" flag:"leader-elect" help:"Elect a leader so that only one replica acts; others stand by."`
	LeaderElectionID       string `mapstructure:"leaderElectionID" flag:"leader-election-id" help:"Name of the leader-election Lease (in the registration namespace)."`
	AgentImage             string `mapstructure:"agentImage" flag:"agent-image" help:"Image of the data-dir guard init container in memory-backed members' Pods and of EtcdSnapshot Jobs; it must hold etcdfleet-agent, as the etcdfleet image does (mirror it for air-gapped registries, and allow the mirror in the workload admission policy: etcdfleetctl register --allowed-images or the workload chart's admissionPolicy.allowedImages)."`
	// EnsureWorkloadCRDs installs the etcd.etcdfleet.io CRDs in each
	// workload cluster before engaging it; needs CRD write permission there.
	EnsureWorkloadCRDs bool `mapstructure:"ensureWorkloadCRDs" flag:"ensure-workload-crds" help:"Install the etcd.etcdfleet.io CRDs (EtcdCluster, EtcdMember, EtcdSnapshot, EtcdDefrag) in each workload cluster before engaging it (opt-in: needs CRD write permission there)."`
	// AllowUnconstrained is kubeconfigsecret Options.AllowUnconstrained.
	AllowUnconstrained bool `mapstructure:"allowUnconstrained" flag:"allow-unconstrained" help:"Engage a workload cluster even when its admission does not refuse what the credentials must not write (a dry-run Pod, Job, claim, Service and PodDisruptionBudget that no etcdfleet builder produces is admitted: the workload admission policies are missing). Off: such a cluster is refused with Unconstrained. On: it is engaged, and still shown Constrained=False with a Warning Event."`

	Sharding Sharding `mapstructure:"sharding"`
}

// ClustersConfig is how workload clusters are reached and probed: the
// provider's ClusterConfig and the reconcilers' per-call timeout.
type ClustersConfig struct {
	kubeconfigsecret.ClusterConfig `mapstructure:",squash"`
	// RequestTimeout bounds each API call of the reconcilers
	// (operator.NewClientWithTimeout).
	RequestTimeout time.Duration `mapstructure:"requestTimeout" flag:"cluster-request-timeout" help:"Timeout of each API call the reconcilers make to a workload apiserver (the caches' watches excepted)."`
}

// Default returns the defaults: the parts' own (their Default* values),
// so there is one place for each, and the manager's.
func Default() Config {
	return Config{
		Namespace:  fleetv1.DefaultRegistrationNamespace,
		EtcdAccess: string(operator.PortForward),
		Workers:    operator.DefaultFleetWorkers,
		// The isolation of clusters from each other is memberctl/operator's.
		WorkersPerCluster:      operator.DefaultWorkersPerCluster,
		ReconcileTimeout:       operator.DefaultReconcileTimeout,
		Limiter:                limiter.DefaultConfig(),
		Snapshots:              limiter.DefaultSlotsConfig(),
		Rollout:                limiter.DefaultRolloutConfig(),
		SnapshotAgent:          agent.DefaultS3Limits(),
		Replacement:            replacement.DefaultPolicy(),
		Clusters:               ClustersConfig{ClusterConfig: kubeconfigsecret.DefaultClusterConfig(), RequestTimeout: operator.DefaultRequestTimeout},
		Dashboard:              dashboard.DefaultConfig(),
		Metrics:                DefaultMetrics(),
		HealthProbeBindAddress: ":8081",
		LeaderElection:         true,
		LeaderElectionID:       "etcdfleet-manager",
		AgentImage:             datadirguard.DefaultImage,
		Sharding:               DefaultSharding(),
	}
}
