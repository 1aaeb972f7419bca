package dashboard

import (
	"cmp"
	"slices"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

// EtcdSummary is the etcd health of one workload cluster.
type EtcdSummary struct {
	// EtcdClusters counts the EtcdClusters; QuorateEtcdClusters those with
	// quorum (see Quorate).
	EtcdClusters        int32
	QuorateEtcdClusters int32
	// MembersReady sums status.readyMembers, MembersDesired spec.replicas.
	MembersReady   int32
	MembersDesired int32
	// ReplacementsTotal sums the EtcdMembers' status.replacement.total;
	// LastReplacementTime is the newest status.replacement.lastTime.
	ReplacementsTotal   int64
	LastReplacementTime *metav1.Time
	// Backups summarises the EtcdClusters' backup schedules.
	Backups BackupSummary
	// Health counts the EtcdClusters with etcd alarms or near their quota.
	Health HealthSummary
	// Rollout counts the EtcdClusters by where their roll stands.
	Rollout RolloutSummary
	// States lists the EtcdClusters worst first (see Severity), at most
	// fleetv1.MaxEtcdClusterStates of them.
	States []fleetv1.EtcdClusterState
}

// Healthy reports whether every EtcdCluster has quorum and every desired
// member is ready. It reads only the counts, so it also works on counts
// read back from a FleetCluster's status.
func (s EtcdSummary) Healthy() bool {
	return s.QuorateEtcdClusters == s.EtcdClusters && s.MembersReady >= s.MembersDesired
}

// Severity ranks an EtcdClusterState; lower is worse.
type Severity int

// Severities, worst first.
const (
	SeverityQuorumLost Severity = iota
	SeverityUnavailable
	SeverityDegraded
	SeverityHealthy
)

// SeverityOf ranks one state: quorum lost, then unavailable, then degraded
// (fewer ready members than desired), then healthy. An EtcdCluster scaled
// to 0 replicas is paused on purpose and ranks healthy.
func SeverityOf(s fleetv1.EtcdClusterState) Severity {
	switch {
	case s.DesiredMembers == 0:
		return SeverityHealthy
	case !s.Quorum:
		return SeverityQuorumLost
	case !s.Available:
		return SeverityUnavailable
	case s.ReadyMembers < s.DesiredMembers:
		return SeverityDegraded
	}
	return SeverityHealthy
}

// compareStates orders states worst first, then by namespace and name.
func compareStates(a, b fleetv1.EtcdClusterState) int {
	return cmp.Or(
		cmp.Compare(SeverityOf(a), SeverityOf(b)),
		cmp.Compare(a.Namespace, b.Namespace),
		cmp.Compare(a.Name, b.Name),
	)
}

// SummarizeEtcd computes the etcd health of one workload cluster from its
// EtcdClusters and EtcdMembers. It does not modify its arguments.
func SummarizeEtcd(clusters []etcdv1.EtcdCluster, members []etcdv1.EtcdMember) EtcdSummary {
	var s EtcdSummary
	states := make([]fleetv1.EtcdClusterState, 0, len(clusters))
	for i := range clusters {
		st := StateOf(&clusters[i])
		s.EtcdClusters++
		if st.Quorum {
			s.QuorateEtcdClusters++
		}
		s.MembersReady += st.ReadyMembers
		s.MembersDesired += st.DesiredMembers
		states = append(states, st)
	}
	s.Backups = SummarizeBackups(clusters)
	s.Health = SummarizeHealth(clusters)
	s.Rollout = SummarizeRollout(clusters)
	slices.SortFunc(states, compareStates)
	if len(states) > fleetv1.MaxEtcdClusterStates {
		states = states[:fleetv1.MaxEtcdClusterStates]
	}
	if len(states) > 0 {
		s.States = states
	}
	for i := range members {
		r := members[i].Status.Replacement
		if r == nil {
			continue
		}
		s.ReplacementsTotal += int64(r.Total)
		if r.LastTime != nil && (s.LastReplacementTime == nil || r.LastTime.After(s.LastReplacementTime.Time)) {
			t := seconds(r.LastTime.Time)
			s.LastReplacementTime = &t
		}
	}
	return s
}

// StateOf is the state of one EtcdCluster. Quorum is true when the
// Available condition is True, or when the ready voters in status.members
// (members that are not learners) reach a majority of
// max(spec.replicas, voters) by etcd.HasQuorum, as the cluster controller
// counts it. A cluster with nothing to be a majority of (0 replicas, no
// voters) has quorum.
func StateOf(ec *etcdv1.EtcdCluster) fleetv1.EtcdClusterState {
	desired := etcdv1.DefaultReplicas
	if ec.Spec.Replicas != nil {
		desired = *ec.Spec.Replicas
	}
	var voters, readyVoters int32
	for _, m := range ec.Status.Members {
		if m.Role == etcdv1.MemberRoleLearner {
			continue
		}
		voters++
		if m.Ready {
			readyVoters++
		}
	}
	st := fleetv1.EtcdClusterState{
		Namespace:      ec.Namespace,
		Name:           ec.Name,
		ReadyMembers:   ec.Status.ReadyMembers,
		DesiredMembers: desired,
	}
	if c := apimeta.FindStatusCondition(ec.Status.Conditions, etcdv1.ConditionAvailable); c != nil {
		st.Available = c.Status == metav1.ConditionTrue
		st.Reason = c.Reason
	}
	st.Quorum = st.Available || etcd.HasQuorum(int(readyVoters), int(max(desired, voters)))
	if st.Reason == etcdv1.ReasonMajorityLost {
		// Proven lost for good, whatever the members' lagging Ready says:
		// counted as quorum lost, and shown by its reason.
		st.Quorum = false
	}
	return st
}
