package dashboard

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

func TestSummarizeRolloutCountsEachRollAndSaysWhyTheFirstWaits(t *testing.T) {
	ec := func(name string, conds ...metav1.Condition) etcdv1.EtcdCluster {
		return etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Status: etcdv1.EtcdClusterStatus{Conditions: conds}}
	}
	cond := func(t string, s metav1.ConditionStatus, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Message: msg}
	}
	r := SummarizeRollout([]etcdv1.EtcdCluster{
		ec("steady"),
		ec("rolling", cond(etcdv1.ConditionInRollout, metav1.ConditionTrue, "holds")),
		ec("waiting", cond(etcdv1.ConditionInRollout, metav1.ConditionFalse, "the fleet's rollout is paused")),
		ec("blocked", cond(etcdv1.ConditionUpgradeBlocked, metav1.ConditionTrue, "3.5 to 3.7 skips a minor")),
		ec("allowed", cond(etcdv1.ConditionUpgradeBlocked, metav1.ConditionFalse, "allowed")),
	})
	want := RolloutSummary{Rolling: 1, Waiting: 1, Blocked: 1, Message: "ns/waiting: the fleet's rollout is paused"}
	if r != want {
		t.Fatalf("SummarizeRollout = %+v, want %+v", r, want)
	}

	var cs fleetv1.FleetClusterStatus
	applyRollout(&cs, r)
	var fs fleetv1.FleetStatus
	addRollout(&fs, "w1", cs)
	addRollout(&fs, "w2", fleetv1.FleetClusterStatus{EtcdClustersRolling: 2})
	if fs.ClustersRolling != 2 || fs.ClustersWaitingToRoll != 1 || fs.ClustersRollBlocked != 1 ||
		fs.RolloutMessage != "w1: ns/waiting: the fleet's rollout is paused" {
		t.Fatalf("fleet rollout %+v", fs)
	}
}
