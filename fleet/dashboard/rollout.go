package dashboard

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// RolloutSummary counts one workload cluster's EtcdClusters by where
// their roll stands in the fleet's rollout, as memberctl's InRollout and
// UpgradeBlocked conditions state it.
type RolloutSummary struct {
	// Rolling hold a place, Waiting wait for one, Blocked have a refused
	// upgrade.
	Rolling, Waiting, Blocked int32
	// Message is "<namespace>/<name>: <reason>" of the first (by the
	// list's order) EtcdCluster that waits or is blocked.
	Message string
}

// SummarizeRollout reads the rollout contract of memberctl's EtcdCluster.
func SummarizeRollout(clusters []etcdv1.EtcdCluster) RolloutSummary {
	var r RolloutSummary
	for i := range clusters {
		ec := &clusters[i]
		note := func(c *metav1.Condition) {
			if r.Message == "" {
				r.Message = ec.Namespace + "/" + ec.Name + ": " + c.Message
			}
		}
		if c := apimeta.FindStatusCondition(ec.Status.Conditions, etcdv1.ConditionInRollout); c != nil {
			if c.Status == metav1.ConditionTrue {
				r.Rolling++
			} else {
				r.Waiting++
				note(c)
			}
		}
		if c := apimeta.FindStatusCondition(ec.Status.Conditions, etcdv1.ConditionUpgradeBlocked); c != nil && c.Status == metav1.ConditionTrue {
			r.Blocked++
			note(c)
		}
	}
	return r
}

// applyRollout writes r into a FleetCluster's status.
func applyRollout(st *fleetv1.FleetClusterStatus, r RolloutSummary) {
	st.EtcdClustersRolling, st.EtcdClustersWaitingToRoll, st.EtcdClustersRollBlocked = r.Rolling, r.Waiting, r.Blocked
	st.RolloutMessage = r.Message
}

// addRollout counts one FleetCluster's rollout into the Fleet's status.
func addRollout(st *fleetv1.FleetStatus, name string, s fleetv1.FleetClusterStatus) {
	if s.EtcdClustersRolling > 0 {
		st.ClustersRolling++
	}
	if s.EtcdClustersWaitingToRoll > 0 {
		st.ClustersWaitingToRoll++
	}
	if s.EtcdClustersRollBlocked > 0 {
		st.ClustersRollBlocked++
	}
	if st.RolloutMessage == "" && s.RolloutMessage != "" {
		st.RolloutMessage = name + ": " + s.RolloutMessage
	}
}
