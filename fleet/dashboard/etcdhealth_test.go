package dashboard

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// TestEtcdHealthReachesRowFleetAndGauges: the EtcdClusters' AlarmActive
// and NearQuota conditions are counted on the FleetCluster, the Fleet
// counts the clusters that have any, and the gauges the chart's alerts
// read follow the row. A plain test: the Ginkgo suite of this package
// starts an apiserver.
func TestEtcdHealthReachesRowFleetAndGauges(t *testing.T) {
	cond := func(typ string, s metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, Reason: "R"}
	}
	ecs := []etcdv1.EtcdCluster{
		{Status: etcdv1.EtcdClusterStatus{Conditions: []metav1.Condition{
			cond(etcdv1.ConditionAlarmActive, metav1.ConditionTrue), cond(etcdv1.ConditionNearQuota, metav1.ConditionTrue)}}},
		{Status: etcdv1.EtcdClusterStatus{Conditions: []metav1.Condition{
			cond(etcdv1.ConditionAlarmActive, metav1.ConditionFalse), cond(etcdv1.ConditionNearQuota, metav1.ConditionTrue)}}},
		{Status: etcdv1.EtcdClusterStatus{Conditions: []metav1.Condition{
			cond(etcdv1.ConditionAlarmActive, metav1.ConditionUnknown)}}},
	}
	h := SummarizeHealth(ecs)
	if h != (HealthSummary{WithAlarms: 1, NearQuota: 2}) {
		t.Fatalf("SummarizeHealth = %+v, want 1 with alarms, 2 near quota", h)
	}

	now := time.Now()
	row := buildClusterStatus(nil, clusterInput{etcd: &EtcdSummary{Health: h}}, 1, now)
	if row.EtcdClustersWithAlarms != 1 || row.EtcdClustersNearQuota != 2 {
		t.Fatalf("row: %d with alarms, %d near quota; want 1 and 2", row.EtcdClustersWithAlarms, row.EtcdClustersNearQuota)
	}
	healthy := fleetv1.FleetClusterStatus{}
	fleet := buildFleetStatus(nil, []clusterRow{{Name: "a", Status: &row}, {Name: "b", Status: &healthy}, {Name: "c", Status: &row}}, nil, false, 1, now)
	if fleet.ClustersWithAlarms != 2 || fleet.ClustersNearQuota != 2 {
		t.Fatalf("fleet: %d clusters with alarms, %d near quota; want 2 and 2", fleet.ClustersWithAlarms, fleet.ClustersNearQuota)
	}

	const c = "health-metrics-test"
	t.Cleanup(func() { forgetCluster(c) })
	publishCluster(c, &row)
	if got := testutil.ToFloat64(clusterWithAlarms.WithLabelValues(c)); got != 1 {
		t.Errorf("with alarms: got %v, want 1", got)
	}
	if got := testutil.ToFloat64(clusterNearQuota.WithLabelValues(c)); got != 2 {
		t.Errorf("near quota: got %v, want 2", got)
	}
}
