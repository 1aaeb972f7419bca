package rotation

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
)

// ConditionTokenRotation, on the FleetCluster of an opted-in registration,
// is True while rotation works (reasons Scheduled, Rotated) and False when
// it cannot (the other reasons), with what to do in the message. It is
// absent for registrations not opted in.
const ConditionTokenRotation = "TokenRotation"

// Reasons of ConditionTokenRotation, and of the Events.
const (
	ReasonScheduled = "Scheduled"
	ReasonRotated   = "Rotated"
	// ReasonWorkloadForbidden: the workload cluster does not grant the
	// manager a token of its own (not opted in there).
	ReasonWorkloadForbidden = "WorkloadForbidden"
	// ReasonWorkloadRefused: the workload admission policy, or the
	// apiserver, refused the token asked for.
	ReasonWorkloadRefused = "WorkloadRefused"
	// ReasonManagementForbidden: the manager may not update registration
	// Secrets (the etcdfleet chart's tokenRotation.enabled is off).
	ReasonManagementForbidden = "ManagementForbidden"
	ReasonRotationFailed      = "RotationFailed"
	// ReasonNotRotatable: the registered token cannot be rotated safely
	// (not a bound ServiceAccount token) or the window is invalid.
	ReasonNotRotatable = "NotRotatable"
	// ReasonTokenExpired: the token expired before it could be rotated.
	ReasonTokenExpired = "TokenExpired"
)

// Metric names (registered on controller-runtime's registry).
const (
	MetricRotations = "etcdfleet_token_rotations_total"
	MetricFailing   = "etcdfleet_token_rotation_failing"
)

var (
	rotations = prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRotations,
		Help: "Token rotations of opted-in registrations, by result (success, failure)."}, []string{"result"})
	failing = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricFailing,
		Help: "1 while the token rotation of an opted-in registration fails (FleetCluster condition TokenRotation=False), else 0."},
		[]string{"cluster"})
)

func init() {
	metrics.Registry.MustRegister(rotations, failing)
	rotations.WithLabelValues("success")
	rotations.WithLabelValues("failure")
}

// forget drops the series of a registration gone or opted out.
func forget(name string) { failing.DeleteLabelValues(name) }

// scheduled shows when the next rotation is due, keeping a Rotated
// condition's message (which says it too) until the next change.
func (r *Rotator) scheduled(ctx context.Context, req ctrl.Request, at time.Time) error {
	failing.WithLabelValues(req.Name).Set(0)
	return r.setCondition(ctx, req, func(conds *[]metav1.Condition) bool {
		if c := apimeta.FindStatusCondition(*conds, ConditionTokenRotation); c != nil && c.Status == metav1.ConditionTrue &&
			c.Reason == ReasonRotated {
			return false
		}
		return apimeta.SetStatusCondition(conds, r.condition(metav1.ConditionTrue, ReasonScheduled,
			"the token will be rotated at "+stamp(at)))
	}, "", "")
}

// rotated records a rotation.
func (r *Rotator) rotated(ctx context.Context, req ctrl.Request, now, expires time.Time, p Policy) error {
	rotations.WithLabelValues("success").Inc()
	failing.WithLabelValues(req.Name).Set(0)
	msg := fmt.Sprintf("rotated the token at %s; the new one expires at %s and will be rotated at %s",
		stamp(now), stamp(expires), stamp(p.RotateAt(now, expires)))
	ctrl.LoggerFrom(ctx).Info("Rotated the registration token", "cluster", req.Name, "expiresAt", expires)
	return r.setCondition(ctx, req, func(conds *[]metav1.Condition) bool {
		return apimeta.SetStatusCondition(conds, r.condition(metav1.ConditionTrue, ReasonRotated, msg))
	}, corev1.EventTypeNormal, msg)
}

// fail shows why the token is not rotated; retry returns an error so that
// the controller retries with backoff (a refusal may be lifted, a network
// may heal), while a registration that cannot be rotated as it is waits
// for its Secret to change.
func (r *Rotator) fail(ctx context.Context, req ctrl.Request, reason, msg string, retry bool) error {
	rotations.WithLabelValues("failure").Inc()
	failing.WithLabelValues(req.Name).Set(1)
	err := r.setCondition(ctx, req, func(conds *[]metav1.Condition) bool {
		return apimeta.SetStatusCondition(conds, r.condition(metav1.ConditionFalse, reason, msg))
	}, corev1.EventTypeWarning, msg)
	if err != nil || !retry {
		return err
	}
	return fmt.Errorf("token rotation of %s: %s", req.Name, msg)
}

// clearCondition removes the condition of a registration not opted in.
func (r *Rotator) clearCondition(ctx context.Context, req ctrl.Request) error {
	return r.setCondition(ctx, req, func(conds *[]metav1.Condition) bool {
		return apimeta.RemoveStatusCondition(conds, ConditionTokenRotation)
	}, "", "")
}

func (r *Rotator) condition(status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	if len(msg) > 1024 {
		msg = msg[:1021] + "..."
	}
	return metav1.Condition{Type: ConditionTokenRotation, Status: status, Reason: reason, Message: msg,
		LastTransitionTime: metav1.NewTime(r.opts.Now())}
}

// setCondition applies change to the FleetCluster's conditions and writes
// them when it changed anything, recording an Event of eventType when the
// condition changed (eventType "": none). The dashboard keeps conditions it
// does not compute, so the two writers do not undo each other. A missing
// FleetCluster (the dashboard creates it) is no error: the Event on it is
// skipped too, and the next reconcile writes the condition.
func (r *Rotator) setCondition(ctx context.Context, req ctrl.Request, change func(*[]metav1.Condition) bool, eventType, msg string) error {
	var fc fleetv1.FleetCluster
	changed := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := r.c.Get(ctx, req.NamespacedName, &fc); err != nil {
			return err
		}
		if changed = change(&fc.Status.Conditions); !changed {
			return nil
		}
		return r.c.Status().Update(ctx, &fc)
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if changed && eventType != "" && r.opts.Recorder != nil {
		c := apimeta.FindStatusCondition(fc.Status.Conditions, ConditionTokenRotation)
		reason := "TokenRotated"
		if eventType == corev1.EventTypeWarning {
			reason = "TokenRotationFailed"
		}
		if c != nil {
			r.opts.Recorder.Event(&fc, eventType, reason, msg)
		}
	}
	return nil
}
