package dashboard

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
)

// Per-cluster health gauges: the FleetCluster row's figures as metrics, so
// alerts need not read the dashboard CRD. They follow the rows the Writer
// computes, and a cluster's series go when it is unregistered.
var (
	clusterConnected = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcdfleet_cluster_connected",
		Help: "1 when the workload cluster's apiserver answered the last probe, else 0.",
	}, []string{"cluster"})
	clusterEtcdClusters = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcdfleet_cluster_etcdclusters",
		Help: "EtcdClusters in the workload cluster.",
	}, []string{"cluster"})
	clusterQuorate = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcdfleet_cluster_etcdclusters_quorate",
		Help: "EtcdClusters of the workload cluster that have quorum.",
	}, []string{"cluster"})
	clusterMembersReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcdfleet_cluster_members_ready",
		Help: "Ready etcd members over the workload cluster's EtcdClusters.",
	}, []string{"cluster"})
	clusterMembersDesired = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcdfleet_cluster_members_desired",
		Help: "Desired etcd members (spec.replicas) over the workload cluster's EtcdClusters.",
	}, []string{"cluster"})
	// The backup and credential figures are here so that the chart's
	// alerts need no schedule or token lifetime of their own: the row
	// already judged them (BackedUp, CredentialsExpiring).
	clusterBackupBehind = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcdfleet_cluster_etcdclusters_backup_behind",
		Help: "EtcdClusters of the workload cluster with a backup schedule whose BackedUp condition is False: a scheduled snapshot is not complete 30 minutes after its due time, or failed.",
	}, []string{"cluster"})
	// etcd's own health, as the EtcdClusters' AlarmActive and NearQuota
	// conditions judged it.
	clusterWithAlarms = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcdfleet_cluster_etcdclusters_with_alarms",
		Help: "EtcdClusters of the workload cluster with an active etcd alarm (AlarmActive=True: NOSPACE refuses writes, CORRUPT wants a human).",
	}, []string{"cluster"})
	clusterNearQuota = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcdfleet_cluster_etcdclusters_near_quota",
		Help: "EtcdClusters of the workload cluster whose database is at 80% of its backend quota or more (NearQuota=True).",
	}, []string{"cluster"})
	clusterCredentialsExpiring = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcdfleet_cluster_credentials_expiring",
		Help: "1 while the FleetCluster's CredentialsExpiring condition is True (less than a fifth of the registration token's lifetime left, or expired), else 0; absent while the token states no lifetime.",
	}, []string{"cluster"})
	clusterTokenExpiry = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "etcdfleet_cluster_token_expiry_timestamp_seconds",
		Help: "When the registration token of the workload cluster expires (Unix seconds, its JWT exp claim); absent for tokens without one and for client certificates.",
	}, []string{"cluster"})
	clusterGauges = []*prometheus.GaugeVec{clusterConnected, clusterEtcdClusters, clusterQuorate, clusterMembersReady, clusterMembersDesired,
		clusterBackupBehind, clusterWithAlarms, clusterNearQuota, clusterCredentialsExpiring, clusterTokenExpiry}
)

func init() {
	for _, g := range clusterGauges {
		metrics.Registry.MustRegister(g)
	}
}

// publishCluster sets the cluster's gauges from its computed row.
func publishCluster(cluster string, st *fleetv1.FleetClusterStatus) {
	connected := 0.0
	if meta.IsStatusConditionTrue(st.Conditions, fleetv1.ConditionConnected) {
		connected = 1
	}
	clusterConnected.WithLabelValues(cluster).Set(connected)
	clusterEtcdClusters.WithLabelValues(cluster).Set(float64(st.EtcdClusters))
	clusterQuorate.WithLabelValues(cluster).Set(float64(st.QuorateEtcdClusters))
	clusterMembersReady.WithLabelValues(cluster).Set(float64(st.MembersReady))
	clusterMembersDesired.WithLabelValues(cluster).Set(float64(st.MembersDesired))
	clusterBackupBehind.WithLabelValues(cluster).Set(float64(st.EtcdClustersBehindBackup))
	clusterWithAlarms.WithLabelValues(cluster).Set(float64(st.EtcdClustersWithAlarms))
	clusterNearQuota.WithLabelValues(cluster).Set(float64(st.EtcdClustersNearQuota))
	// Absent rather than 0 when unknown: 0 would read "never expires" to
	// the expiry panel and "expired at the epoch" to an alert on time().
	switch c := meta.FindStatusCondition(st.Conditions, fleetv1.ConditionCredentialsExpiring); {
	case c == nil:
		clusterCredentialsExpiring.DeleteLabelValues(cluster)
	case c.Status == metav1.ConditionTrue:
		clusterCredentialsExpiring.WithLabelValues(cluster).Set(1)
	default:
		clusterCredentialsExpiring.WithLabelValues(cluster).Set(0)
	}
	if st.TokenExpiresAt == nil {
		clusterTokenExpiry.DeleteLabelValues(cluster)
	} else {
		clusterTokenExpiry.WithLabelValues(cluster).Set(float64(st.TokenExpiresAt.Unix()))
	}
}

// forgetCluster drops an unregistered cluster's series.
func forgetCluster(cluster string) {
	for _, g := range clusterGauges {
		g.DeleteLabelValues(cluster)
	}
}
