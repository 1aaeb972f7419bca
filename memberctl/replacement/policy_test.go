package replacement

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

var (
	shutdown  = Cause{Phase: "Failed", Reason: "Terminated", Shutdown: true}
	admission = Cause{Phase: "Failed", Reason: "UnexpectedAdmissionError"}
)

func TestFirstReplacementNeverWaits(t *testing.T) {
	if v := DefaultPolicy().Decide(t0, nil, shutdown, ""); !v.Allowed || v.Wait != 0 {
		t.Fatalf("first replacement: %+v, want allowed at once", v)
	}
}

func TestBackoffDoublesToMax(t *testing.T) {
	p := DefaultPolicy()
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
	for i, w := range want {
		if got := p.Backoff(int32(i + 1)); got != w {
			t.Errorf("Backoff(%d) = %s, want %s", i+1, got, w)
		}
	}
	if got := p.Backoff(40); got != 5*time.Minute {
		t.Errorf("Backoff(40) = %s, want the 5m cap", got)
	}
}

func TestRepeatedReplacementsBackOff(t *testing.T) {
	p := DefaultPolicy()
	st := p.Record(t0, nil, shutdown, "uid1", "")
	st = p.Record(t0, st, shutdown, "uid2", "")
	v := p.Decide(t0.Add(500*time.Millisecond), st, shutdown, "")
	if v.Allowed || v.Wait != 1500*time.Millisecond {
		t.Fatalf("after 2 replacements: %+v, want wait 1.5s", v)
	}
	if v := p.Decide(t0.Add(2*time.Second), st, shutdown, ""); !v.Allowed {
		t.Fatalf("after the backoff: %+v, want allowed", v)
	}
}

func TestCapAppliesToNonShutdownOnly(t *testing.T) {
	p := DefaultPolicy()
	var st *v1alpha1.ReplacementStatus
	now := t0
	for i := 0; i < int(p.Cap); i++ {
		if v := p.Decide(now, st, admission, ""); !v.Allowed {
			t.Fatalf("replacement %d: %+v, want allowed", i, v)
		}
		st = p.Record(now, st, admission, "u", "")
		now = now.Add(p.MaxBackoff)
	}
	if v := p.Decide(now, st, admission, ""); !v.Exhausted || v.Allowed {
		t.Fatalf("past the cap: %+v, want exhausted", v)
	}
	if v := p.Decide(now, st, shutdown, ""); !v.Allowed {
		t.Fatalf("a node shutdown is never capped: %+v", v)
	}
	if st.Total != p.Cap || st.CappedCount != p.Cap {
		t.Fatalf("counts %d/%d, want %d", st.Total, st.CappedCount, p.Cap)
	}
}

func TestShutdownCountedButNotCapped(t *testing.T) {
	p := DefaultPolicy()
	var st *v1alpha1.ReplacementStatus
	for i := 0; i < 20; i++ {
		st = p.Record(t0.Add(time.Duration(i)*time.Hour), st, shutdown, "u", "")
	}
	if st.Total != 20 || st.CappedCount != 0 {
		t.Fatalf("total %d capped %d, want 20 and 0", st.Total, st.CappedCount)
	}
}

func TestReplaceNowBypassesOncePerValue(t *testing.T) {
	p := DefaultPolicy()
	st := &v1alpha1.ReplacementStatus{CappedCount: p.Cap, WindowStart: &metav1.Time{Time: t0}}
	v := p.Decide(t0, st, admission, "try-1")
	if !v.Allowed || !v.ReplaceNow {
		t.Fatalf("replace-now: %+v, want allowed", v)
	}
	st = p.Record(t0, st, admission, "u", "try-1")
	if v := p.Decide(t0.Add(time.Hour/2), st, admission, "try-1"); !v.Exhausted {
		t.Fatalf("the same value again: %+v, want exhausted", v)
	}
	if v := p.Decide(t0.Add(time.Hour/2), st, admission, "try-2"); !v.Allowed {
		t.Fatalf("a new value: %+v, want allowed", v)
	}
}

func TestHealthyPeriodResets(t *testing.T) {
	p := DefaultPolicy()
	st := &v1alpha1.ReplacementStatus{Total: 7, CappedCount: p.Cap, Consecutive: 7, WindowStart: &metav1.Time{Time: t0},
		NotBefore: &metav1.Time{Time: t0.Add(time.Minute)}}
	st, left := p.ObserveReady(t0, st, true)
	if left != p.HealthyReset || st.HealthySince == nil {
		t.Fatalf("first ready: left %s, since %v", left, st.HealthySince)
	}
	mid, _ := p.ObserveReady(t0.Add(5*time.Minute), st, false)
	if mid.HealthySince != nil {
		t.Fatal("not ready must restart the healthy period")
	}
	st, left = p.ObserveReady(t0.Add(p.HealthyReset), st, true)
	if left != 0 || st.CappedCount != 0 || st.Consecutive != 0 || st.NotBefore != nil {
		t.Fatalf("after the healthy period: %+v left %s", st, left)
	}
	if st.Total != 7 {
		t.Fatalf("total is history and must stay: %d", st.Total)
	}
	if v := p.Decide(t0.Add(p.HealthyReset), st, admission, ""); !v.Allowed {
		t.Fatalf("after reset: %+v", v)
	}
}

func TestWindowExpiryResetsCap(t *testing.T) {
	p := DefaultPolicy()
	st := &v1alpha1.ReplacementStatus{CappedCount: p.Cap, WindowStart: &metav1.Time{Time: t0}}
	if v := p.Decide(t0.Add(p.Window), st, admission, ""); !v.Allowed {
		t.Fatalf("new window: %+v", v)
	}
}
