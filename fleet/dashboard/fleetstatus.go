package dashboard

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/limiter"
)

// clusterRow is one cluster as the Fleet aggregates it.
type clusterRow struct {
	Namespace, Name string
	Status          *fleetv1.FleetClusterStatus
}

// rank orders clusters for Fleet's worstClusters; lower is worse.
type rank int

const (
	rankQuorumLost rank = iota // connected, some EtcdCluster lost quorum
	rankNotConnected
	rankOther // connected but not Ready for another reason (etcd unknown)
	rankMembersUnhealthy
	rankReady
)

// reason is the Fleet's Ready reason when its worst cluster has rank r.
func (r rank) reason() string {
	switch r {
	case rankQuorumLost:
		return fleetv1.ReasonQuorumLost
	case rankNotConnected:
		return fleetv1.ReasonNotConnected
	case rankMembersUnhealthy:
		return fleetv1.ReasonMembersUnhealthy
	case rankReady:
		return fleetv1.ReasonHealthy
	}
	return ReasonEtcdUnknown
}

// rankOf ranks a cluster, with a magnitude to break ties within the rank
// (more lost etcd clusters, or more unready members, is worse) and the
// reason it is listed for.
func rankOf(st *fleetv1.FleetClusterStatus) (r rank, magnitude int32, reason string) {
	connected := apimeta.FindStatusCondition(st.Conditions, fleetv1.ConditionConnected)
	readyCond := apimeta.FindStatusCondition(st.Conditions, fleetv1.ConditionReady)
	switch {
	case connected == nil || connected.Status != metav1.ConditionTrue:
		reason = fleetv1.ReasonNotConnected
		if connected != nil {
			reason = connected.Reason
		}
		return rankNotConnected, 0, reason
	case st.QuorateEtcdClusters < st.EtcdClusters:
		return rankQuorumLost, st.EtcdClusters - st.QuorateEtcdClusters, fleetv1.ReasonQuorumLost
	case readyCond != nil && readyCond.Status == metav1.ConditionTrue:
		return rankReady, 0, ""
	case readyCond != nil && readyCond.Reason == fleetv1.ReasonMembersUnhealthy:
		return rankMembersUnhealthy, st.MembersDesired - st.MembersReady, readyCond.Reason
	case readyCond != nil:
		return rankOther, 0, readyCond.Reason
	}
	return rankOther, 0, ReasonEtcdUnknown
}

// worstClusters returns the clusters that are not Ready, worst first, at
// most fleetv1.MaxWorstClusters of them.
func worstClusters(rows []clusterRow) []fleetv1.FleetClusterRef {
	type ranked struct {
		ref fleetv1.FleetClusterRef
		r   rank
		mag int32
	}
	var list []ranked
	for _, row := range rows {
		r, mag, reason := rankOf(row.Status)
		if r == rankReady {
			continue
		}
		list = append(list, ranked{fleetv1.FleetClusterRef{Name: row.Name, Namespace: row.Namespace, Reason: reason}, r, mag})
	}
	slices.SortFunc(list, func(a, b ranked) int {
		return cmp.Or(cmp.Compare(a.r, b.r), cmp.Compare(b.mag, a.mag),
			cmp.Compare(a.ref.Namespace, b.ref.Namespace), cmp.Compare(a.ref.Name, b.ref.Name))
	})
	if len(list) > fleetv1.MaxWorstClusters {
		list = list[:fleetv1.MaxWorstClusters]
	}
	var out []fleetv1.FleetClusterRef
	for _, x := range list {
		out = append(out, x.ref)
	}
	return out
}

// buildFleetStatus aggregates the clusters' statuses into the Fleet's. prev
// is not modified; stats may be nil (no limiter).
func buildFleetStatus(prev *fleetv1.FleetStatus, rows []clusterRow, stats *limiter.Stats, paused bool, generation int64, now time.Time) fleetv1.FleetStatus {
	st := fleetv1.FleetStatus{ObservedGeneration: generation}
	if prev != nil {
		st.Conditions = slices.Clone(prev.Conditions)
	}
	st.ClustersTotal = int32(len(rows))
	for _, row := range rows {
		s := row.Status
		connected := apimeta.IsStatusConditionTrue(s.Conditions, fleetv1.ConditionConnected)
		if connected {
			st.ClustersConnected++
			if s.QuorateEtcdClusters == s.EtcdClusters {
				st.ClustersQuorate++
			}
		}
		if apimeta.IsStatusConditionTrue(s.Conditions, fleetv1.ConditionDegraded) {
			st.ClustersDegraded++
		}
		st.ReplacementsTotal += s.ReplacementsTotal
		if s.EtcdClustersBehindBackup > 0 {
			st.ClustersBehindBackupSchedule++
		}
		if s.EtcdClustersWithAlarms > 0 {
			st.ClustersWithAlarms++
		}
		if s.EtcdClustersNearQuota > 0 {
			st.ClustersNearQuota++
		}
		addRollout(&st, row.Name, *s)
	}
	if stats != nil {
		st.Limiter = limiterStatus(*stats)
	}
	st.WorstClusters = worstClusters(rows)

	set := func(typ string, ok bool, reason, msg string) {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		apimeta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: typ, Status: status, ObservedGeneration: generation,
			LastTransitionTime: seconds(now), Reason: reason, Message: msg,
		})
	}
	counts := fmt.Sprintf("%d clusters: %d connected, %d quorate, %d degraded",
		st.ClustersTotal, st.ClustersConnected, st.ClustersQuorate, st.ClustersDegraded)
	if len(st.WorstClusters) == 0 {
		set(fleetv1.ConditionReady, true, fleetv1.ReasonHealthy, counts)
	} else {
		w := st.WorstClusters[0]
		r, _, _ := rankOf(statusOf(rows, w))
		reason := r.reason()
		if r == rankOther && w.Reason != "" {
			// Connected but not Ready for a reason of its own
			// (MissingRights, DuplicateCluster): say that, not "unknown".
			reason = w.Reason
		}
		set(fleetv1.ConditionReady, false, reason,
			fmt.Sprintf("%s; worst: %s/%s (%s)", counts, w.Namespace, w.Name, w.Reason))
	}
	switch {
	case st.ClustersDegraded == 0:
		set(fleetv1.ConditionDegraded, false, fleetv1.ReasonHealthy, counts)
	case anyQuorumLost(rows):
		set(fleetv1.ConditionDegraded, true, fleetv1.ReasonQuorumLost, counts)
	default:
		set(fleetv1.ConditionDegraded, true, fleetv1.ReasonMembersUnhealthy, counts)
	}
	if paused {
		set(fleetv1.ConditionPaused, true, fleetv1.ReasonFleetPaused, "spec.paused: destructive actions wait in every cluster")
	} else {
		set(fleetv1.ConditionPaused, false, fleetv1.ReasonNotPaused, "")
	}
	return st
}

func statusOf(rows []clusterRow, ref fleetv1.FleetClusterRef) *fleetv1.FleetClusterStatus {
	for _, r := range rows {
		if r.Namespace == ref.Namespace && r.Name == ref.Name {
			return r.Status
		}
	}
	return &fleetv1.FleetClusterStatus{}
}

func anyQuorumLost(rows []clusterRow) bool {
	for _, r := range rows {
		if apimeta.IsStatusConditionTrue(r.Status.Conditions, fleetv1.ConditionDegraded) &&
			r.Status.QuorateEtcdClusters < r.Status.EtcdClusters {
			return true
		}
	}
	return false
}

// limiterStatus converts a limiter snapshot; tokens are floored.
func limiterStatus(s limiter.Stats) *fleetv1.LimiterStatus {
	tokens := math.Floor(s.TokensAvailable)
	return &fleetv1.LimiterStatus{
		Rate:            FormatRate(s.Rate),
		Burst:           clampInt32(float64(s.Burst)),
		TokensAvailable: clampInt32(tokens),
		Waiting:         clampInt32(float64(s.Waiting)),
	}
}

func clampInt32(f float64) int32 {
	switch {
	case math.IsNaN(f) || f < 0:
		return 0
	case f > math.MaxInt32:
		return math.MaxInt32
	}
	return int32(f)
}

// FormatRate renders a per-second rate for people: "2/s", "0.5/s" is
// "1/2s", 1/30 is "1/30s". Three significant digits at most.
func FormatRate(perSecond float64) string {
	switch {
	case math.IsNaN(perSecond) || perSecond <= 0:
		return "0/s"
	case math.IsInf(perSecond, 1):
		return "unlimited"
	case perSecond >= 1:
		return short(perSecond) + "/s"
	}
	return "1/" + short(1/perSecond) + "s"
}

// short formats f with at most three significant digits, without exponent
// for the magnitudes a rate has.
func short(f float64) string {
	g, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'g', 3, 64), 64)
	return strconv.FormatFloat(g, 'f', -1, 64)
}

// semanticEqual compares API values the way the apiserver round-trips them.
func semanticEqual(a, b any) bool { return equality.Semantic.DeepEqual(a, b) }
