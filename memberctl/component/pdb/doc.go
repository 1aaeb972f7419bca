// Package pdb manages the PodDisruptionBudget <cluster> over an EtcdCluster's
// voting members.
//
// It selects the cluster label plus role=voter, the label the pod package
// keeps in step with each member's status.isVoter; learners are not
// selected, since evicting one never costs quorum.
//
// minAvailable is the etcd majority (memberctl/etcd.Majority) of the larger
// of the current voter count and the desired size (status.observed.replicas,
// else spec.replicas). Taking the larger keeps the budget from
// shrinking while voters are missing: with 3 desired and only 2 voters
// left, minAvailable stays 2, so no voluntary eviction may take one more.
//
// The budget is deleted when there are no voters (a paused cluster) and is
// otherwise written only when it differs. An older budget using
// maxUnavailable is migrated to minAvailable. A budget of that name
// controlled by another owner is refused with component.ErrForeign.
package pdb
