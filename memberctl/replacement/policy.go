package replacement

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// Policy holds the limits. Defaults live in DefaultPolicy, checks in
// Validate. It is also the manager's configuration of them: the tags give
// each field's config key, flag and help (fleet/settings reads them).
type Policy struct {
	InitialBackoff time.Duration `mapstructure:"initialBackoff" flag:"replacement-initial-backoff" help:"Wait after a member's first replacement before another; doubles per consecutive replacement."`
	MaxBackoff     time.Duration `mapstructure:"maxBackoff" flag:"replacement-max-backoff" help:"Longest wait between replacements of one member."`
	Cap            int32         `mapstructure:"cap" flag:"replacement-cap" help:"Replacements per window whose cause is not node shutdown before a member stops being replaced (ReplacementsExhausted)."`
	Window         time.Duration `mapstructure:"window" flag:"replacement-window" help:"Window over which the replacement cap counts."`
	HealthyReset   time.Duration `mapstructure:"healthyReset" flag:"replacement-healthy-reset" help:"How long a member must stay Ready for its backoff and cap to reset."`
}

// DefaultPolicy is 1 s backoff doubling to 5 min, at most 5 capped
// replacements per hour, reset by 10 min of readiness.
func DefaultPolicy() Policy {
	return Policy{InitialBackoff: time.Second, MaxBackoff: 5 * time.Minute, Cap: 5, Window: time.Hour, HealthyReset: 10 * time.Minute}
}

// Cause is why the Pod is being replaced.
type Cause struct {
	Phase  string
	Reason string
	// Shutdown is true for a graceful node shutdown (reason Terminated or a
	// DisruptionTarget condition): never capped.
	Shutdown bool
}

// Verdict is Decide's answer.
type Verdict struct {
	// Allowed: replace now (subject to the shared gate).
	Allowed bool
	// Wait is the backoff left when not allowed and not exhausted.
	Wait time.Duration
	// Exhausted: the cap is reached; do nothing until reset or replace-now.
	Exhausted bool
	// ReplaceNow: allowed only because of a new replace-now value.
	ReplaceNow bool
}

// Decide says whether a replacement may happen now.
func (p Policy) Decide(now time.Time, st *v1alpha1.ReplacementStatus, c Cause, replaceNow string) Verdict {
	if st == nil {
		st = &v1alpha1.ReplacementStatus{}
	}
	if replaceNow != "" && replaceNow != st.ReplaceNowHandled {
		return Verdict{Allowed: true, ReplaceNow: true}
	}
	if !c.Shutdown && p.cappedCount(now, st) >= p.Cap {
		return Verdict{Exhausted: true}
	}
	if st.NotBefore != nil && now.Before(st.NotBefore.Time) {
		return Verdict{Wait: st.NotBefore.Sub(now)}
	}
	return Verdict{Allowed: true}
}

// cappedCount is the number of capped replacements in the current window.
func (p Policy) cappedCount(now time.Time, st *v1alpha1.ReplacementStatus) int32 {
	if st.WindowStart == nil || now.Sub(st.WindowStart.Time) >= p.Window {
		return 0
	}
	return st.CappedCount
}

// Record returns st updated with one replacement made now.
func (p Policy) Record(now time.Time, st *v1alpha1.ReplacementStatus, c Cause, podUID types.UID, replaceNow string) *v1alpha1.ReplacementStatus {
	out := &v1alpha1.ReplacementStatus{}
	if st != nil {
		out = st.DeepCopy()
	}
	t := metav1.NewTime(now)
	out.Total++
	out.Consecutive++
	out.LastTime = &t
	out.LastReason, out.LastPhase, out.LastPodUID = c.Reason, c.Phase, podUID
	if !c.Shutdown {
		if p.cappedCount(now, out) == 0 {
			out.WindowStart, out.CappedCount = &t, 0
		}
		out.CappedCount++
	}
	next := metav1.NewTime(now.Add(p.Backoff(out.Consecutive)))
	out.NotBefore = &next
	if replaceNow != "" {
		out.ReplaceNowHandled = replaceNow
	}
	out.HealthySince = nil
	return out
}

// Backoff is the wait after the n-th consecutive replacement.
func (p Policy) Backoff(n int32) time.Duration {
	d := p.InitialBackoff
	for i := int32(1); i < n && d < p.MaxBackoff; i++ {
		d *= 2
	}
	if d > p.MaxBackoff {
		d = p.MaxBackoff
	}
	return d
}

// ObserveReady returns st updated for the member's readiness now, and, when
// a reset is pending, how long until it is due (zero otherwise). A member
// Ready for HealthyReset has its backoff and cap cleared.
func (p Policy) ObserveReady(now time.Time, st *v1alpha1.ReplacementStatus, ready bool) (*v1alpha1.ReplacementStatus, time.Duration) {
	if st == nil {
		return nil, 0
	}
	out := st.DeepCopy()
	if !ready {
		out.HealthySince = nil
		return out, 0
	}
	if out.HealthySince == nil {
		t := metav1.NewTime(now)
		out.HealthySince = &t
	}
	if !p.resettable(out) {
		return out, 0
	}
	if left := p.HealthyReset - now.Sub(out.HealthySince.Time); left > 0 {
		return out, left
	}
	out.Consecutive, out.CappedCount, out.WindowStart, out.NotBefore = 0, 0, nil, nil
	return out, 0
}

func (p Policy) resettable(st *v1alpha1.ReplacementStatus) bool {
	return st.Consecutive > 0 || st.CappedCount > 0 || st.NotBefore != nil
}
