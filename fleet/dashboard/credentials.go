package dashboard

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
)

// CredentialsExpiringFraction: CredentialsExpiring turns True when less
// than this fraction of the token's lifetime is left, early enough to
// rotate in working hours whatever the lifetime (a day of a week, about
// ten weeks of a year).
const CredentialsExpiringFraction = 0.2

// setCredentialsStatus sets tokenExpiresAt and CredentialsExpiring from
// the token's lifetime. Both are removed when it states none. Messages
// hold only fixed dates, so that a status is not rewritten as time passes.
func setCredentialsStatus(st *fleetv1.FleetClusterStatus, info ClusterInfo, generation int64, now time.Time) {
	if info.TokenExpiresAt.IsZero() {
		st.TokenExpiresAt = nil
		apimeta.RemoveStatusCondition(&st.Conditions, fleetv1.ConditionCredentialsExpiring)
		return
	}
	exp := seconds(info.TokenExpiresAt)
	st.TokenExpiresAt = &exp
	expires := info.TokenExpiresAt.UTC().Format(time.RFC3339)
	// The scope is not repeated from the Secret on purpose: whoever may
	// write the Secret must not choose what the next token is granted.
	rotate := fmt.Sprintf("rotate it with: etcdfleetctl register %s --namespace %s and the scope it was registered with (--namespaces or --cluster-wide)",
		info.Name, info.Namespace)
	lifetime := info.TokenExpiresAt.Sub(info.TokenIssuedAt)
	var status metav1.ConditionStatus
	var reason, msg string
	switch {
	case !now.Before(info.TokenExpiresAt):
		status, reason = metav1.ConditionTrue, fleetv1.ReasonTokenExpired
		msg = fmt.Sprintf("the registration token expired at %s; %s", expires, rotate)
	case info.TokenIssuedAt.IsZero():
		// exp alone: no lifetime to take a fraction of.
		apimeta.RemoveStatusCondition(&st.Conditions, fleetv1.ConditionCredentialsExpiring)
		return
	case info.TokenExpiresAt.Sub(now) < time.Duration(CredentialsExpiringFraction*float64(lifetime)):
		status, reason = metav1.ConditionTrue, fleetv1.ReasonTokenExpiring
		msg = fmt.Sprintf("the registration token expires at %s, with less than %.0f%% of its %s lifetime left; %s",
			expires, CredentialsExpiringFraction*100, lifetime, rotate)
	default:
		status, reason = metav1.ConditionFalse, fleetv1.ReasonTokenValid
		msg = fmt.Sprintf("the registration token expires at %s (lifetime %s)", expires, lifetime)
	}
	apimeta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: fleetv1.ConditionCredentialsExpiring, Status: status, ObservedGeneration: generation,
		LastTransitionTime: seconds(now), Reason: reason, Message: clip(msg),
	})
}

// announceCredentials records a Warning Event on fc when its credentials
// started expiring, or expired, between the status it had and want.
func (w *Writer) announceCredentials(fc *fleetv1.FleetCluster, had, want *fleetv1.FleetClusterStatus) {
	if w.opts.Recorder == nil {
		return
	}
	now := apimeta.FindStatusCondition(want.Conditions, fleetv1.ConditionCredentialsExpiring)
	if now == nil || now.Status != metav1.ConditionTrue {
		return
	}
	if before := apimeta.FindStatusCondition(had.Conditions, fleetv1.ConditionCredentialsExpiring); before != nil &&
		before.Status == now.Status && before.Reason == now.Reason {
		return
	}
	w.opts.Recorder.Event(fc, corev1.EventTypeWarning, now.Reason, now.Message)
}
