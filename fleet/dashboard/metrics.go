package dashboard

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
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
	clusterGauges = []*prometheus.GaugeVec{clusterConnected, clusterEtcdClusters, clusterQuorate, clusterMembersReady, clusterMembersDesired}
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
}

// forgetCluster drops an unregistered cluster's series.
func forgetCluster(cluster string) {
	for _, g := range clusterGauges {
		g.DeleteLabelValues(cluster)
	}
}
