package dashboard

import (
	"fmt"
	"regexp"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
)

// Condition reasons of this package, beside those in fleet/api/v1alpha1.
const (
	// ReasonClusterPaused (Paused=True): the registration Secret pauses
	// this cluster while the Fleet is not paused.
	ReasonClusterPaused = "ClusterPaused"
	// ReasonEtcdUnknown (Ready=False): the cluster answers probes but its
	// EtcdClusters could not be read (its cache is not engaged yet). The
	// counts are the last known ones.
	ReasonEtcdUnknown = "EtcdStatusUnknown"
)

// maxMessage bounds messages copied from elsewhere (probe errors).
const maxMessage = 1024

// clusterInput is everything one FleetCluster's status is computed from.
type clusterInput struct {
	info ClusterInfo
	// etcd is nil when the etcd objects are unknown now (disconnected, or
	// etcdErr): the previous status's counts are kept.
	etcd    *EtcdSummary
	etcdErr error
	// fleetPaused is the Fleet's spec.paused.
	fleetPaused bool
	// waiting and throttled come from the limiter; throttledKnown is false
	// when the limiter does not list the cluster.
	waiting        int
	throttled      uint64
	throttledKnown bool
}

// buildClusterStatus computes a FleetCluster's status from its inputs and
// its previous status, which is not modified. Conditions keep their
// lastTransitionTime unless their status changes.
func buildClusterStatus(prev *fleetv1.FleetClusterStatus, in clusterInput, generation int64, now time.Time) fleetv1.FleetClusterStatus {
	var st fleetv1.FleetClusterStatus
	if prev != nil {
		prev.DeepCopyInto(&st)
	}
	if e := in.etcd; e != nil {
		st.EtcdClusters, st.QuorateEtcdClusters = e.EtcdClusters, e.QuorateEtcdClusters
		st.MembersReady, st.MembersDesired = e.MembersReady, e.MembersDesired
		st.ReplacementsTotal, st.LastReplacementTime = e.ReplacementsTotal, e.LastReplacementTime.DeepCopy()
		st.EtcdClusterStates = append([]fleetv1.EtcdClusterState(nil), e.States...)
		applyBackups(&st, e.Backups)
		applyHealth(&st, e.Health)
		applyRollout(&st, e.Rollout)
	}
	st.MembersSummary = fmt.Sprintf("%d/%d", st.MembersReady, st.MembersDesired)
	info := in.info
	st.Replica = info.Replica
	if info.ServerVersion != "" {
		st.ServerVersion = info.ServerVersion
	}
	if info.ClusterID != "" {
		st.ClusterID = info.ClusterID
	}
	if !info.LastProbeTime.IsZero() {
		t := seconds(info.LastProbeTime)
		st.LastProbeTime = &t
	}
	st.ReplacementsWaiting = int32(in.waiting)
	if in.throttledKnown || info.Connected {
		st.ReplacementsThrottled = int64(in.throttled)
	}

	set := func(typ string, ok bool, reason, msg string) {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		apimeta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: typ, Status: status, ObservedGeneration: generation,
			LastTransitionTime: seconds(now), Reason: reason, Message: clip(msg),
		})
	}

	if info.Connected {
		set(fleetv1.ConditionConnected, true, validReason(info.Reason, fleetv1.ReasonProbeSucceeded), info.Message)
	} else {
		set(fleetv1.ConditionConnected, false, validReason(info.Reason, fleetv1.ReasonProbeFailed), info.Message)
	}

	lost := st.EtcdClusters - st.QuorateEtcdClusters
	unready := st.MembersDesired - st.MembersReady
	counts := fmt.Sprintf("%d of %d etcd clusters quorate, %s members ready",
		st.QuorateEtcdClusters, st.EtcdClusters, st.MembersSummary)
	var degradedReason, degradedMsg string
	switch {
	case lost > 0:
		degradedReason = fleetv1.ReasonQuorumLost
		degradedMsg = fmt.Sprintf("%d etcd cluster(s) lost quorum%s; %s", lost, worstState(st.EtcdClusterStates), counts)
	case unready > 0:
		degradedReason = fleetv1.ReasonMembersUnhealthy
		degradedMsg = fmt.Sprintf("%d etcd member(s) not ready%s; %s", unready, worstState(st.EtcdClusterStates), counts)
	}

	setAuthorized(set, info)
	setConstrained(set, info)
	setNamespacesGranted(set, info)
	readyReason, readyMsg := fleetv1.ReasonHealthy, counts
	switch {
	case info.Duplicate:
		readyReason, readyMsg = fleetv1.ReasonDuplicateCluster, info.Message
	case !info.Connected && info.Reason == fleetv1.ReasonUnconstrained:
		readyReason, readyMsg = fleetv1.ReasonUnconstrained, info.Message
	case info.Connected && info.MissingRights != "":
		readyReason = fleetv1.ReasonMissingRights
		readyMsg = "the workload credentials lack permissions the reconcilers need: " + info.MissingRights + "; " + counts
	case !info.Connected:
		readyReason = fleetv1.ReasonNotConnected
		readyMsg = "the workload cluster is not connected"
		if info.Message != "" {
			readyMsg += ": " + info.Message
		}
		readyMsg += "; last known: " + counts
	case in.etcdErr != nil:
		readyReason = ReasonEtcdUnknown
		readyMsg = "etcd objects cannot be read: " + in.etcdErr.Error() + "; last known: " + counts
	case degradedReason != "":
		readyReason, readyMsg = degradedReason, degradedMsg
	}
	ready := readyReason == fleetv1.ReasonHealthy
	set(fleetv1.ConditionReady, ready, readyReason, readyMsg)
	if degradedReason != "" {
		set(fleetv1.ConditionDegraded, true, degradedReason, degradedMsg)
	} else {
		set(fleetv1.ConditionDegraded, false, fleetv1.ReasonHealthy, counts)
	}

	switch {
	case in.fleetPaused:
		set(fleetv1.ConditionPaused, true, fleetv1.ReasonFleetPaused, "the Fleet is paused: destructive actions wait")
	case info.Paused:
		set(fleetv1.ConditionPaused, true, ReasonClusterPaused, "the registration Secret pauses this cluster: destructive actions wait")
	default:
		set(fleetv1.ConditionPaused, false, fleetv1.ReasonNotPaused, "")
	}

	setCredentialsStatus(&st, info, generation, now)

	st.Message = ""
	if !ready {
		st.Message = clip(readyMsg)
	}
	return st
}

// setAuthorized sets the Authorized condition from what is known of the
// credentials' rights (a connected cluster's last check, or a connection
// refused for missing permissions); otherwise it stays as it was.
func setAuthorized(set func(typ string, ok bool, reason, msg string), info ClusterInfo) {
	switch {
	case info.MissingRights != "":
		set(fleetv1.ConditionAuthorized, false, fleetv1.ReasonMissingRights,
			"the workload credentials lack permissions the reconcilers need: "+info.MissingRights)
	case info.Connected:
		set(fleetv1.ConditionAuthorized, true, fleetv1.ReasonRightsGranted, "the workload credentials have every permission the reconcilers need")
	}
}

// setConstrained sets the Constrained condition from the last constraint
// check; before any answered, it stays as it was.
func setConstrained(set func(typ string, ok bool, reason, msg string), info ClusterInfo) {
	switch {
	case !info.ConstraintKnown:
	case info.Unconstrained != "":
		set(fleetv1.ConditionConstrained, false, fleetv1.ReasonUnconstrained,
			"admission admitted writes the credentials must not be able to make: "+info.Unconstrained)
	case info.OverPrivileged != "":
		set(fleetv1.ConditionConstrained, false, fleetv1.ReasonOverPrivileged,
			"the credentials hold rights beyond what the reconcilers need: "+info.OverPrivileged)
	default:
		set(fleetv1.ConditionConstrained, true, fleetv1.ReasonConstrained,
			"admission refuses what the credentials must not write, and they hold no right beyond the expected ones")
	}
}

// setNamespacesGranted says whether EtcdClusters wait in namespaces that a
// namespaced registration does not grant.
func setNamespacesGranted(set func(typ string, ok bool, reason, msg string), info ClusterInfo) {
	if info.UnwatchedNamespaces != "" {
		set(fleetv1.ConditionNamespacesGranted, false, fleetv1.ReasonNamespacesNotGranted,
			"namespaces "+info.UnwatchedNamespaces+" hold EtcdClusters that nothing reconciles: the registration does not grant them "+
				"(etcdfleetctl register --namespaces, or bind the workload role there)")
		return
	}
	set(fleetv1.ConditionNamespacesGranted, true, fleetv1.ReasonNamespacesGranted,
		"every namespace that holds EtcdClusters is granted, as far as the credential can see")
}

// worstState names the worst EtcdCluster, as " (worst: ns/name, Reason)".
func worstState(states []fleetv1.EtcdClusterState) string {
	if len(states) == 0 || SeverityOf(states[0]) == SeverityHealthy {
		return ""
	}
	s := states[0]
	if s.Reason == "" {
		return fmt.Sprintf(" (worst: %s/%s)", s.Namespace, s.Name)
	}
	return fmt.Sprintf(" (worst: %s/%s, %s)", s.Namespace, s.Name, s.Reason)
}

// changed reports whether want differs from have enough to be written. A
// lastProbeTime that moved by less than refresh does not count on its own.
func clusterStatusChanged(have, want *fleetv1.FleetClusterStatus, refresh time.Duration) bool {
	if have.LastProbeTime != nil && want.LastProbeTime != nil &&
		want.LastProbeTime.Sub(have.LastProbeTime.Time) < refresh {
		w := want.DeepCopy()
		w.LastProbeTime = have.LastProbeTime
		want = w
	}
	return !semanticEqual(have, want)
}

// conditionReason matches the reasons metav1.Condition accepts.
var conditionReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// validReason returns r if the apiserver accepts it as a condition reason,
// else def, so a bad reason from the wiring cannot block every write.
func validReason(r, def string) string {
	if len(r) <= 1024 && conditionReason.MatchString(r) {
		return r
	}
	return def
}

// clip bounds a message to maxMessage bytes, cutting on a rune boundary.
func clip(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage - len("...")
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "..."
}

// seconds returns t in UTC truncated to the second: the apiserver stores
// times that way, so comparing against what it returns must too.
func seconds(t time.Time) metav1.Time {
	return metav1.NewTime(t.UTC().Truncate(time.Second))
}
