package dashboard

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// HealthSummary counts one workload cluster's EtcdClusters by etcd's own
// health, as memberctl's AlarmActive and NearQuota conditions state it.
type HealthSummary struct {
	// WithAlarms counts those with an active etcd alarm (NOSPACE, CORRUPT).
	WithAlarms int32
	// NearQuota counts those whose database is at 80 % of its quota or more.
	NearQuota int32
}

// SummarizeHealth reads the health contract of memberctl's EtcdCluster
// (the AlarmActive and NearQuota conditions).
func SummarizeHealth(clusters []etcdv1.EtcdCluster) HealthSummary {
	var h HealthSummary
	for i := range clusters {
		conds := clusters[i].Status.Conditions
		if apimeta.IsStatusConditionTrue(conds, etcdv1.ConditionAlarmActive) {
			h.WithAlarms++
		}
		if apimeta.IsStatusConditionTrue(conds, etcdv1.ConditionNearQuota) {
			h.NearQuota++
		}
	}
	return h
}

// applyHealth writes h into a FleetCluster's status.
func applyHealth(st *fleetv1.FleetClusterStatus, h HealthSummary) {
	st.EtcdClustersWithAlarms, st.EtcdClustersNearQuota = h.WithAlarms, h.NearQuota
}
