package etcd

// Majority is raft's quorum: the number of voters that must agree, and so
// the number that must be up, for an etcd cluster of the given number of
// voters to make progress. Every quorum decision in etcdfleet (replacement
// gating, the PodDisruptionBudget, scale-down safety, the dashboard) uses
// this one formula.
func Majority(voters int) int { return voters/2 + 1 }

// HasQuorum reports whether healthy voters out of voters form a majority.
// An etcd cluster with no voters has no quorum to lose and reports true.
func HasQuorum(healthy, voters int) bool { return voters == 0 || healthy >= Majority(voters) }
