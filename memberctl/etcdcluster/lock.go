package etcdcluster

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// The progress lock. New members are templated from status.observed, a copy
// of the spec latched when the cluster was last complete (or first seen).
// A spec edit made while a step is in flight waits until the step completes
// or its deadline (status.progressDeadline) passes; a step that misses its
// deadline is terminal until the spec changes again or a user patches or
// removes status.progressDeadline.

type lockAction int

const (
	// lockKeep: a step is in flight and within its deadline (or has none).
	lockKeep lockAction = iota
	// lockSnapshot: latch the spec into observed and start a new deadline.
	lockSnapshot
	// lockReconciled: complete and matching the spec; clear the deadline.
	lockReconciled
	// lockTerminal: the deadline passed; take no step.
	lockTerminal
	// lockRetry: a user moved or removed the deadline of a terminal step.
	lockRetry
)

// lockInput is everything decideLock looks at.
type lockInput struct {
	spec        v1alpha1.EtcdClusterObservedSpec // the current spec, as it would be latched
	observed    *v1alpha1.EtcdClusterObservedSpec
	deadline    *metav1.Time
	progressing string // reason of the current Progressing condition
	complete    bool
	latched     bool
	now         time.Time
}

// decideLock returns what to do with the lock, and the reason to report.
func decideLock(in lockInput) (lockAction, string) {
	if in.observed == nil {
		return lockSnapshot, v1alpha1.ReasonInitialSnapshot
	}
	changed := !equality.Semantic.DeepEqual(in.spec, *in.observed)
	if in.complete {
		if changed {
			return lockSnapshot, v1alpha1.ReasonSpecChanged
		}
		return lockReconciled, v1alpha1.ReasonReconciled
	}
	if in.deadline != nil && !in.now.Before(in.deadline.Time) {
		switch {
		case !in.latched && in.observed.Replicas > 0:
			// The seed never formed a cluster; its members were templated
			// from the old spec, so a new spec cannot help.
			return lockTerminal, v1alpha1.ReasonBootstrapFailed
		case changed:
			return lockSnapshot, v1alpha1.ReasonRetryAfterDeadline
		default:
			return lockTerminal, v1alpha1.ReasonDeadlineExceeded
		}
	}
	if in.progressing == v1alpha1.ReasonBootstrapFailed || in.progressing == v1alpha1.ReasonDeadlineExceeded {
		return lockRetry, v1alpha1.ReasonRetryAfterDeadline
	}
	if in.deadline == nil && changed {
		// Incomplete without a step in flight: a member is being replaced.
		// Nothing would ever release the lock, so the edit (perhaps the
		// fix that lets the replacement schedule) applies now.
		return lockSnapshot, v1alpha1.ReasonSpecChanged
	}
	return lockKeep, ""
}

// snapshotSpec is the part of the spec new members are templated from.
func snapshotSpec(s *v1alpha1.EtcdClusterSpec) v1alpha1.EtcdClusterObservedSpec {
	replicas := v1alpha1.DefaultReplicas
	if s.Replicas != nil {
		replicas = *s.Replicas
	}
	c := s.DeepCopy()
	return v1alpha1.EtcdClusterObservedSpec{
		Replicas:                  replicas,
		Version:                   c.Version,
		Storage:                   c.Storage,
		Resources:                 c.Resources,
		Affinity:                  c.Affinity,
		TopologySpreadConstraints: c.TopologySpreadConstraints,
		Options:                   c.Options,
	}
}

// progressDeadline is when a step started now times out.
func progressDeadline(ec *v1alpha1.EtcdCluster, now time.Time) *metav1.Time {
	secs := ec.Spec.ProgressDeadlineSeconds
	if secs <= 0 {
		secs = v1alpha1.DefaultProgressDeadlineSeconds
	}
	t := metav1.NewTime(now.Add(time.Duration(secs) * time.Second).Truncate(time.Second))
	return &t
}

// complete reports whether the cluster has reached status.observed: the
// desired number of running members, all Ready, none being deleted, no
// learner left to promote, and (unless paused) a latched cluster ID.
func (p *pass) complete() bool {
	o, ms := p.ec.Status.Observed, p.members
	if o == nil || len(ms.deleting) > 0 || int32(len(ms.running)) != o.Replicas || !ms.allReady() {
		return false
	}
	if o.Replicas > 0 && p.ec.Status.ClusterID == "" {
		return false
	}
	return !p.etcd.ok || p.etcd.voters() == int32(len(p.etcd.members))
}

// applyLock runs decideLock and records its outcome in the status.
func (p *pass) applyLock() {
	st := &p.ec.Status
	prev := apimeta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgressing)
	prevReason := ""
	if prev != nil {
		prevReason = prev.Reason
	}
	action, reason := decideLock(lockInput{
		spec: snapshotSpec(&p.ec.Spec), observed: st.Observed, deadline: st.ProgressDeadline,
		progressing: prevReason, complete: p.complete(), latched: st.ClusterID != "", now: p.now,
	})
	switch action {
	case lockSnapshot:
		p.lockSnapshot(reason)
	case lockReconciled:
		st.ProgressDeadline = nil
		p.setCondition(v1alpha1.ConditionProgressing, metav1.ConditionFalse, reason, p.reconciledMessage())
	case lockRetry:
		if st.ProgressDeadline == nil || !p.now.Before(st.ProgressDeadline.Time) {
			st.ProgressDeadline = progressDeadline(p.ec, p.now)
		}
		p.setCondition(v1alpha1.ConditionProgressing, metav1.ConditionTrue, reason,
			fmt.Sprintf("retrying after the progress deadline: %s", p.goal(st.Observed)))
	case lockTerminal:
		p.terminal = reason
		msg := fmt.Sprintf("the progress deadline passed before reaching %s; "+
			"change the spec, or patch or remove status.progressDeadline to retry", p.goal(st.Observed))
		if reason == v1alpha1.ReasonBootstrapFailed {
			msg = "the seed member did not form a cluster before the progress deadline; " +
				"delete and recreate the EtcdCluster, or patch or remove status.progressDeadline to retry"
		}
		if prevReason != reason {
			p.event(corev1.EventTypeWarning, reason, "%s", msg)
		}
		p.setCondition(v1alpha1.ConditionProgressing, metav1.ConditionFalse, reason, msg)
	}
}

// lockSnapshot latches the spec and starts a new deadline.
func (p *pass) lockSnapshot(reason string) {
	st := &p.ec.Status
	o := snapshotSpec(&p.ec.Spec)
	st.Observed = &o
	st.ProgressDeadline = progressDeadline(p.ec, p.now)
	msg := map[string]string{
		v1alpha1.ReasonInitialSnapshot:    "latched the spec: ",
		v1alpha1.ReasonSpecChanged:        "the spec changed: moving to ",
		v1alpha1.ReasonRetryAfterDeadline: "the spec changed after the progress deadline: moving to ",
	}[reason] + p.goal(&o)
	p.setCondition(v1alpha1.ConditionProgressing, metav1.ConditionTrue, reason, msg)
}

// reconciledMessage says what runs, as the members report it: the
// latched version alone would claim an upgrade still rolling, or refused.
func (p *pass) reconciledMessage() string {
	o := p.ec.Status.Observed
	if len(p.versions.counts) == 0 {
		return fmt.Sprintf("%d member(s), all ready; none has reported its etcd version yet (new members get %s)", o.Replicas, o.Version)
	}
	return fmt.Sprintf("%d member(s), all ready, running %s", o.Replicas, p.versions.running())
}

// goal is what a step moves towards. Once members report versions other
// than the latched one it says what happens to them: rolled one at a time
// (roll.go), or kept while the change is refused.
func (p *pass) goal(o *v1alpha1.EtcdClusterObservedSpec) string {
	v := p.versions
	if len(v.counts) == 0 || (len(v.counts) == 1 && v.counts[0].Version == o.Version) {
		return fmt.Sprintf("%d ready member(s) of etcd %s", o.Replicas, o.Version)
	}
	if v.blocked() {
		return fmt.Sprintf("%d ready member(s), new ones at etcd %s; running members keep %s (the change is refused)",
			o.Replicas, v.forNewMembers(o.Version), v.running())
	}
	return fmt.Sprintf("%d ready member(s) of etcd %s, rolled one at a time from %s", o.Replicas, o.Version, v.running())
}

// setCondition sets a condition stamped with the cluster's generation;
// the transition time moves only when the status does.
func (p *pass) setCondition(t string, s metav1.ConditionStatus, reason, msg string) {
	apimeta.SetStatusCondition(&p.ec.Status.Conditions, metav1.Condition{
		Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: p.ec.Generation,
	})
}
