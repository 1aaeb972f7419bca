package etcdmember

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component/pod"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
	"github.com/etcdfleet/etcdfleet/memberctl/replacement"
)

// replaceTerminalPod deletes a Pod the kubelet left Succeeded or Failed so
// that the next reconcile recreates it on the same PVC.
func (s *run) replaceTerminalPod(ctx context.Context, p *corev1.Pod) (ctrl.Result, error) {
	m := s.m
	cause := replacement.Cause{Phase: string(p.Status.Phase), Reason: pod.TerminationReason(p), Shutdown: pod.IsShutdownTermination(p)}
	died := fmt.Sprintf("Pod %s is %s (reason %s)", p.Name, cause.Phase, orNone(cause.Reason))
	// Backfill the UID before anything else: a memory member's pod-loss
	// check must see it even if this Pod was never recorded.
	m.Status.PodName, m.Status.PodUID = p.Name, p.UID
	replaceNow := m.Annotations[v1alpha1.AnnotationReplaceNow]
	v := s.r.Options.Policy.Decide(s.now, m.Status.Replacement, cause, replaceNow)
	switch {
	case v.Exhausted:
		return s.exhausted(ctx, died)
	case v.Wait > 0:
		s.setReady(false, v1alpha1.ReasonPodNotReady, fmt.Sprintf("%s; replacement backing off for %s", died, v.Wait.Round(100e6)))
		return s.writeAndRequeue(ctx, v.Wait)
	case s.cl.IsPaused():
		s.setReady(false, v1alpha1.ReasonPodNotReady, died+"; replacement paused for this cluster")
		return s.writeAndRequeue(ctx, s.r.Options.PausedRetry)
	}
	quorumLost, err := s.quorumLost(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	d := s.cl.Gate.Reserve(ctx, s.gateRequest(gate.TerminalPodDelete, quorumLost))
	if d.Delay > 0 {
		throttled.WithLabelValues(s.cl.Name).Inc()
		s.setReady(false, v1alpha1.ReasonPodNotReady, died+"; waiting for the shared replacement rate limiter")
		return s.writeAndRequeue(ctx, d.Delay)
	}
	s.setReady(false, v1alpha1.ReasonPodReplacing, fmt.Sprintf("%s: %s; replacing it", died, orNone(p.Status.Message)))
	m.Status.Replacement = s.r.Options.Policy.Record(s.now, m.Status.Replacement, cause, p.UID, replaceNow)
	if v.ReplaceNow && meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.ConditionReplacementsExhausted) {
		s.setCondition(v1alpha1.ConditionReplacementsExhausted, metav1.ConditionFalse, v1alpha1.ReasonCapReset,
			"replace-now annotation "+replaceNow+" allowed one more replacement")
	}
	// Status first: if this write fails (a conflict with the cluster
	// controller, say), the Pod stays and remains the retry trigger.
	if err := s.writeStatus(ctx); err != nil {
		d.Cancel()
		return ctrl.Result{}, err
	}
	if err := s.cl.Client.Delete(ctx, p, client.Preconditions{UID: &p.UID}); client.IgnoreNotFound(err) != nil {
		d.Cancel()
		return ctrl.Result{}, err
	}
	replacements.WithLabelValues(s.cl.Name, string(gate.TerminalPodDelete), orNone(cause.Reason)).Inc()
	evType := corev1.EventTypeNormal
	if !cause.Shutdown {
		evType = corev1.EventTypeWarning
	}
	s.cl.Recorder.Eventf(m, evType, "ReplacingTerminalPod",
		"%s and the kubelet will not restart it; deleted it to recreate it on the same storage (replacement %d)",
		died, m.Status.Replacement.Total)
	// No requeue: the Pod's deletion event brings the recreate at once.
	return ctrl.Result{}, nil
}

// exhausted stops churning a member whose capped replacements ran out.
func (s *run) exhausted(ctx context.Context, died string) (ctrl.Result, error) {
	m := s.m
	msg := fmt.Sprintf("%s; %d replacements for causes other than node shutdown within %s: not replacing again until the member is Ready for %s or the %s annotation is set to a new value",
		died, m.Status.Replacement.CappedCount, s.r.Options.Policy.Window, s.r.Options.Policy.HealthyReset, v1alpha1.AnnotationReplaceNow)
	if !meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.ConditionReplacementsExhausted) {
		s.warn("ReplacementsExhausted", "%s", msg)
	}
	s.setCondition(v1alpha1.ConditionReplacementsExhausted, metav1.ConditionTrue, v1alpha1.ReasonCapReached, msg)
	s.setReady(false, v1alpha1.ReasonPodNotReady, died+"; replacements exhausted")
	// The cap lifts when the window ends; look again then.
	var after = s.r.Options.Policy.Window
	if ws := m.Status.Replacement.WindowStart; ws != nil {
		after = ws.Add(s.r.Options.Policy.Window).Sub(s.now)
	}
	return s.writeAndRequeue(ctx, after)
}

// replaceLostMemoryMember deletes a memory-backed member whose Pod is gone:
// its data went with the tmpfs, so it must come back as a new member.
func (s *run) replaceLostMemoryMember(ctx context.Context, p *corev1.Pod) (ctrl.Result, error) {
	if s.cl.IsPaused() {
		s.setReady(false, v1alpha1.ReasonPodNotReady, "memory-backed Pod lost; replacement paused for this cluster")
		return s.writeAndRequeue(ctx, s.r.Options.PausedRetry)
	}
	d := s.cl.Gate.Reserve(ctx, s.gateRequest(gate.PodLossReplace, true))
	if d.Delay > 0 {
		throttled.WithLabelValues(s.cl.Name).Inc()
		s.setReady(false, v1alpha1.ReasonPodNotReady, "memory-backed Pod lost; waiting for the shared replacement rate limiter")
		return s.writeAndRequeue(ctx, d.Delay)
	}
	what := "is gone"
	if p != nil {
		what = fmt.Sprintf("was replaced by another Pod (UID %s)", p.UID)
	}
	if err := s.cl.Client.Delete(ctx, s.m, client.Preconditions{UID: &s.m.UID}); client.IgnoreNotFound(err) != nil {
		d.Cancel()
		return ctrl.Result{}, err
	}
	replacements.WithLabelValues(s.cl.Name, string(gate.PodLossReplace), "PodLost").Inc()
	s.warn("MemoryMemberLost", "Pod UID %s %s and its in-memory data with it; removing member %s so that a new member with a new ID replaces it",
		s.m.Status.PodUID, what, s.m.Name)
	return ctrl.Result{}, nil
}

func (s *run) gateRequest(a gate.Action, quorumLost bool) gate.Request {
	return gate.Request{Cluster: s.cl.Name, Namespace: s.m.Namespace, EtcdCluster: s.m.Spec.ClusterName,
		Member: s.m.Name, Action: a, QuorumLost: quorumLost}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
