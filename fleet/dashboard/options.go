package dashboard

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/etcdfleet/etcdfleet/fleet/limiter"
	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// ClusterInfo is what the fleet wiring knows about one registered workload
// cluster: its registration Secret and the last probe of its apiserver.
type ClusterInfo struct {
	// Name and Namespace are the registration Secret's, and so the
	// FleetCluster's.
	Name, Namespace string
	// SecretUID is the Secret's UID; the FleetCluster is owned by it.
	SecretUID types.UID
	// Connected is true when the workload apiserver answered the last probe.
	Connected bool
	// Reason and Message explain Connected (e.g. ProbeFailed and the error).
	Reason, Message string
	// ServerVersion is the workload apiserver's git version.
	ServerVersion string
	// LastProbeTime is when the workload apiserver was last probed.
	LastProbeTime time.Time
	// Paused is true when the Secret asks for this cluster to be paused.
	Paused bool
	// ClusterID identifies the workload cluster (its kube-system Namespace
	// UID); empty when not known yet.
	ClusterID string
	// Duplicate is true when the Secret is refused because another Secret
	// registered the same cluster first; Message names it.
	Duplicate bool
	// MissingRights says which permissions the credentials lack: those the
	// last check of a connected cluster found missing ("; "-separated), or
	// why a connection was refused for lack of them. Empty when none are
	// known to be missing.
	MissingRights string
	// Unconstrained says what admission in the workload cluster admitted
	// that the credentials must not be able to write; empty when it
	// refused all of it or nothing is known yet. With Connected false
	// and Reason Unconstrained, the cluster was refused for it.
	Unconstrained string
	// OverPrivileged lists rights the credentials hold beyond the expected
	// ones ("; "-separated).
	OverPrivileged string
	// ConstraintKnown is true once a constraint check answered.
	ConstraintKnown bool
	// UnwatchedNamespaces lists, ", "-separated, the namespaces outside a
	// namespaced registration that hold EtcdClusters.
	UnwatchedNamespaces string
	// TokenIssuedAt and TokenExpiresAt bound the registration token's
	// lifetime as its claims state it; zero when unknown.
	TokenIssuedAt, TokenExpiresAt time.Time
	// Replica is the sharding replica that owns the cluster, shown as the
	// FleetCluster's status.replica; empty without sharding.
	Replica string
	// OwnedElsewhere is true, with Options.Sharded, when this replica does
	// not own the cluster: another replica writes its FleetCluster, and
	// this one only reads it (for the Fleet, when it leads).
	OwnedElsewhere bool
}

// Source is implemented by the fleet wiring.
type Source interface {
	// Clusters returns every registered Secret.
	Clusters() []ClusterInfo
	// Cluster returns the registered Secret whose Options.ClusterKey is
	// cluster, and false when none is. The writer looks one cluster up per
	// change, so this should not build the whole list.
	Cluster(cluster string) (ClusterInfo, bool)
	// EtcdObjects returns the EtcdClusters and EtcdMembers of a workload
	// cluster from that cluster's cache, or an error if the cluster is not
	// engaged. cluster is Options.ClusterKey of the cluster's ClusterInfo.
	EtcdObjects(ctx context.Context, cluster string) ([]etcdv1.EtcdCluster, []etcdv1.EtcdMember, error)
}

// LimiterStats is the part of the fleet limiter the dashboard reads.
type LimiterStats interface {
	Snapshot() limiter.Stats
}

// Defaults for Options. Options.withDefaults is the only place they are
// applied.
const (
	// DefaultMinInterval keeps a fleet reboot, where every etcd object of
	// every cluster changes many times a second, from becoming a write
	// storm on the management apiserver: each object is written at most
	// once per interval, with the latest state.
	DefaultMinInterval = 2 * time.Second
	// DefaultResync re-reads every cluster even without Notify, which also
	// picks up limiter counters and changes the wiring did not report.
	DefaultResync = 10 * time.Second
	// DefaultProbeRefresh: a change of lastProbeTime alone is written only
	// once the stored time is this old, so probes every few seconds do not
	// rewrite every FleetCluster.
	DefaultProbeRefresh = time.Minute
	// DefaultOrphanGrace is how long a FleetCluster must stay unregistered
	// before it is deleted. It covers a wiring that lists its Secrets only
	// after the writer starts, which would otherwise delete (and lose the
	// last known state of) every FleetCluster on a manager restart.
	DefaultOrphanGrace = 30 * time.Second
)

// Timeouts of reads that should be answered from memory at once, so a
// cache that is not synced cannot stall the controller or FleetPaused's
// caller.
const (
	fleetReadTimeout = 5 * time.Second
	etcdReadTimeout  = 2 * time.Second
)

// Options configure a Writer. Zero fields take the Default* values.
type Options struct {
	// MinInterval is the shortest time between two writes of one object
	// (and between two recomputations of it).
	MinInterval time.Duration
	// Resync is how often every cluster is recomputed without Notify.
	Resync time.Duration
	// ProbeRefresh is how stale a stored lastProbeTime may get before a
	// change of it alone is written.
	ProbeRefresh time.Duration
	// OrphanGrace is how long a FleetCluster whose Secret is no longer
	// registered is kept before it is deleted.
	OrphanGrace time.Duration
	// Recorder, if set, receives a Warning Event on the FleetCluster when
	// its credentials start expiring (CredentialsExpiring turns True).
	Recorder record.EventRecorder
	// Sharded runs the writer on every replica of a sharded manager: each
	// writes the FleetClusters of the clusters it owns (those whose
	// ClusterInfo is not OwnedElsewhere), and only the leader writes the
	// Fleet, with status.replicas, and deletes orphans.
	Sharded bool
	// ClusterKey names a cluster the way Notify, Source.EtcdObjects and the
	// limiter's per-cluster maps do. Default: DefaultClusterKey.
	ClusterKey func(ClusterInfo) string
}

// DefaultClusterKey names a cluster "<namespace>/<name>" of its Secret.
func DefaultClusterKey(c ClusterInfo) string { return c.Namespace + "/" + c.Name }

// DefaultOptions returns Options with every field at its default.
func DefaultOptions() Options { return Options{}.withDefaults() }

// withDefaults returns o with every zero or negative field set to its default.
func (o Options) withDefaults() Options {
	if o.MinInterval <= 0 {
		o.MinInterval = DefaultMinInterval
	}
	if o.Resync <= 0 {
		o.Resync = DefaultResync
	}
	if o.ProbeRefresh <= 0 {
		o.ProbeRefresh = DefaultProbeRefresh
	}
	if o.OrphanGrace <= 0 {
		o.OrphanGrace = DefaultOrphanGrace
	}
	if o.ClusterKey == nil {
		o.ClusterKey = DefaultClusterKey
	}
	return o
}
