package settings

import (
	"fmt"
	"strings"
	"time"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
)

// Setting describes one configuration value.
type Setting struct {
	// Key is the config-file key (dotted for nested values).
	Key string
	// Flag is the command-line flag.
	Flag string
	// Help explains the setting; shown by --help and in the docs.
	Help string
	// Helm is the chart value that sets it.
	Helm string
	ptr  any
}

// Env is the environment variable for the setting: ETCDFLEET_ + the key
// in upper case with dots as underscores.
func (s Setting) Env() string {
	return "ETCDFLEET_" + strings.ToUpper(strings.ReplaceAll(s.Key, ".", "_"))
}

// Default renders the setting's value in c as text.
func (s Setting) Value() string {
	switch p := s.ptr.(type) {
	case *string:
		return *p
	case *int:
		return fmt.Sprint(*p)
	case *float64:
		return fmt.Sprint(*p)
	case *bool:
		return fmt.Sprint(*p)
	case *time.Duration:
		return p.String()
	}
	return ""
}

// Settings lists every setting of c, each pointing at its field.
func Settings(c *Config) []Setting {
	return []Setting{
		{"namespace", "namespace", "Namespace of the kubeconfig Secrets that register workload clusters (label " +
			fleetv1.RegistrationLabel + "=true, key " + fleetv1.KubeconfigKey + ").", "namespace", &c.Namespace},
		{"etcdAccess", "etcd-access", "How etcd members are reached: port-forward (WebSockets through each workload apiserver; works from outside), port-forward-spdy (the same over SPDY, for paths that block WebSocket upgrades; about 0.8 MiB more per member) or direct (Pod IPs; needs the Pod network).", "manager.etcdAccess", &c.EtcdAccess},
		{"workers", "workers", "Concurrent reconciles per controller, shared by the whole fleet.", "manager.workers", &c.Workers},
		{"workersPerCluster", "workers-per-cluster", "Most reconciles of one workload cluster in flight at once, per controller. Below workers, a cluster whose apiserver hangs never holds more than this many workers and the rest of the fleet keeps the others; equal to workers: no cap.", "manager.workersPerCluster", &c.WorkersPerCluster},
		{"reconcileTimeout", "reconcile-timeout", "Longest one reconcile may run; its context then ends and it is retried with backoff. Bounds how long a cluster that stopped answering holds a worker.", "manager.reconcileTimeout", &c.ReconcileTimeout},
		{"limiter.rate", "limiter-rate", "Fleet-wide replacements per second (token bucket rate). Paces replacements; never halts them.", "limiter.rate", &c.Limiter.Rate},
		{"limiter.burst", "limiter-burst", "Fleet-wide replacement burst (token bucket size).", "limiter.burst", &c.Limiter.Burst},
		{"snapshots.maxConcurrent", "snapshots-max-concurrent", "Most EtcdSnapshot Jobs running at once, fleet-wide, and at most one per workload cluster and one per namespace (so a slow object store holds one slot); a snapshot waiting for a slot stays Pending (Ready=False, WaitingForSlot). Apart from the replacement limiter: backups never delay a replacement.", "snapshots.maxConcurrent", &c.Snapshots.MaxConcurrent},
		{"snapshots.startsPerMinute", "snapshots-starts-per-minute", "Most EtcdSnapshot Jobs started per minute, fleet-wide, evenly spaced, so that schedules firing at the same moment across the fleet start one by one.", "snapshots.startsPerMinute", &c.Snapshots.StartsPerMinute},
		{"replacement.initialBackoff", "replacement-initial-backoff", "Wait after a member's first replacement before another; doubles per consecutive replacement.", "replacement.initialBackoff", &c.Replacement.InitialBackoff},
		{"replacement.maxBackoff", "replacement-max-backoff", "Longest wait between replacements of one member.", "replacement.maxBackoff", &c.Replacement.MaxBackoff},
		{"replacement.cap", "replacement-cap", "Replacements per window whose cause is not node shutdown before a member stops being replaced (ReplacementsExhausted).", "replacement.cap", &c.Replacement.Cap},
		{"replacement.window", "replacement-window", "Window over which the replacement cap counts.", "replacement.window", &c.Replacement.Window},
		{"replacement.healthyReset", "replacement-healthy-reset", "How long a member must stay Ready for its backoff and cap to reset.", "replacement.healthyReset", &c.Replacement.HealthyReset},
		{"clusters.qps", "cluster-qps", "Client QPS towards each workload apiserver.", "clusters.qps", &c.Clusters.QPS},
		{"clusters.burst", "cluster-burst", "Client burst towards each workload apiserver.", "clusters.burst", &c.Clusters.Burst},
		{"clusters.requestTimeout", "cluster-request-timeout", "Timeout of each API call the reconcilers make to a workload apiserver (the caches' watches excepted).", "clusters.requestTimeout", &c.Clusters.RequestTimeout},
		{"clusters.preflightTimeout", "cluster-preflight-timeout", "Time allowed to check a workload cluster (discovery and access) before engaging it.", "clusters.preflightTimeout", &c.Clusters.PreflightTimeout},
		{"clusters.probeInterval", "cluster-probe-interval", "How often each engaged workload cluster is probed.", "clusters.probeInterval", &c.Clusters.ProbeInterval},
		{"clusters.probeTimeout", "cluster-probe-timeout", "Timeout of one probe.", "clusters.probeTimeout", &c.Clusters.ProbeTimeout},
		{"clusters.failureThreshold", "cluster-failure-threshold", "Consecutive failed probes before a cluster is marked disconnected and re-engaged.", "clusters.failureThreshold", &c.Clusters.FailureThreshold},
		{"dashboard.minInterval", "dashboard-min-interval", "Least time between two status writes of one FleetCluster or the Fleet.", "dashboard.minInterval", &c.Dashboard.MinInterval},
		{"dashboard.resync", "dashboard-resync", "How often the dashboard is recomputed without a trigger.", "dashboard.resync", &c.Dashboard.Resync},
		{"metricsBindAddress", "metrics-bind-address", "Address of the Prometheus metrics endpoint (\"0\" disables it).", "metrics.bindAddress", &c.MetricsBindAddress},
		{"metricsSecure", "metrics-secure", "Serve metrics over HTTPS to authenticated and authorized clients only (TokenReview and SubjectAccessReview on the management cluster: get on the non-resource URL /metrics). false serves plain HTTP to anyone who reaches the port.", "metrics.secure", &c.MetricsSecure},
		{"metricsCertDir", "metrics-cert-dir", "Directory holding tls.crt and tls.key for the HTTPS metrics endpoint, reloaded when they change; \"\" generates a self-signed certificate at start.", "metrics.certDir", &c.MetricsCertDir},
		{"healthProbeBindAddress", "health-probe-bind-address", "Address of the /healthz and /readyz endpoints.", "probes.bindAddress", &c.HealthProbeBindAddress},
		{"leaderElection", "leader-elect", "Elect a leader so that only one replica acts; others stand by.", "leaderElection.enabled", &c.LeaderElection},
		{"agentImage", "agent-image", "Image of the data-dir guard init container in memory-backed members' Pods and of EtcdSnapshot Jobs; it must hold etcdfleet-agent, as the etcdfleet image does (mirror it for air-gapped registries, and allow the mirror in the workload admission policy: etcdfleetctl register --allowed-images or the workload chart's admissionPolicy.allowedImages).", "manager.agentImage", &c.AgentImage},
		{"ensureWorkloadCRDs", "ensure-workload-crds", "Install the etcd.etcdfleet.io CRDs (EtcdCluster, EtcdMember, EtcdSnapshot, EtcdDefrag) in each workload cluster before engaging it (opt-in: needs CRD write permission there).", "manager.ensureWorkloadCRDs", &c.EnsureWorkloadCRDs},
		{"allowUnconstrained", "allow-unconstrained", "Engage a workload cluster even when its admission does not refuse what the credentials must not write (a dry-run Pod, Job, claim, Service and PodDisruptionBudget that no etcdfleet builder produces is admitted: the workload admission policies are missing). Off: such a cluster is refused with Unconstrained. On: it is engaged, and still shown Constrained=False with a Warning Event.", "manager.allowUnconstrained", &c.AllowUnconstrained},
		{"sharding.enabled", "shard", "Spread the workload clusters over every manager replica (multicluster-runtime's sharded coordinator: rendezvous hashing over live peers, one fence Lease per cluster). Each replica connects only to the clusters it owns; the fleet limiter is split by share (see fleet/limiter). The leader still writes the Fleet.", "sharding.enabled", &c.Sharding.Enabled},
		{"sharding.replicaID", "shard-replica-id", "This replica's name in the peer and fence Leases (mcr-peer-*, mcr-shard-*); empty takes the host name, which is the Pod's name. Must be unique per replica.", "sharding.replicaID", &c.Sharding.ReplicaID},
		{"sharding.leaseDuration", "shard-lease-duration", "Duration of each cluster's fence Lease, renewed every third of it: a dead replica's clusters are taken over after it, plus a sync interval.", "sharding.leaseDuration", &c.Sharding.LeaseDuration},
		{"sharding.syncInterval", "shard-sync-interval", "How often each replica recomputes which clusters it owns.", "sharding.syncInterval", &c.Sharding.SyncInterval},
		{"leaderElectionID", "leader-election-id", "Name of the leader-election Lease (in the registration namespace).", "leaderElection.id", &c.LeaderElectionID},
	}
}
