package replacement

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// FuzzPolicy drives any valid Policy through a sequence of deaths, waits,
// readiness and replace-now annotations taken from the fuzz input, acting
// on every Allowed verdict as the reconciler does, and checks the promises
// the reconciler relies on:
//   - the cap's window is fixed: it opens at a capped replacement and lasts
//     Window, or until HealthyReset of readiness clears it; within it no
//     more than Cap capped replacements start, except those a new
//     replace-now value allowed (which still count);
//   - no replacement before the backoff's NotBefore, except by replace-now;
//   - Backoff stays within [InitialBackoff, MaxBackoff] and never shrinks;
//   - Total counts every replacement once.
func FuzzPolicy(f *testing.F) {
	f.Add(int64(time.Second), int64(5*time.Minute), int32(5), int64(time.Hour), int64(10*time.Minute), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add(int64(time.Millisecond), int64(time.Millisecond), int32(1), int64(time.Second), int64(time.Second), []byte{0xff, 0x10, 0x20, 0x80})
	f.Fuzz(func(t *testing.T, initial, maxB int64, capN int32, window, healthy int64, steps []byte) {
		p := Policy{InitialBackoff: time.Duration(initial), MaxBackoff: time.Duration(maxB), Cap: capN,
			Window: time.Duration(window), HealthyReset: time.Duration(healthy)}
		if p.Validate() != nil {
			t.Skip("invalid policies are refused by configuration validation")
		}
		checkBackoff(t, p)
		now := time.Unix(1_700_000_000, 0)
		var st *v1alpha1.ReplacementStatus
		var winStart time.Time
		inWindow, records, annotation := int32(0), int32(0), ""
		for i, b := range steps {
			now = now.Add(time.Duration(b&0x0f) * p.Window / 8)
			if b&0x10 != 0 {
				st, _ = p.ObserveReady(now, st, true)
				if st != nil && st.WindowStart == nil {
					winStart = time.Time{} // the healthy period cleared the cap
				}
				continue
			}
			if b&0x20 != 0 {
				annotation = fmt.Sprint(i)
			}
			c := Cause{Phase: "Failed", Shutdown: b&0x40 != 0}
			v := p.Decide(now, st, c, annotation)
			if !v.Allowed {
				continue
			}
			if !v.ReplaceNow && st != nil && st.NotBefore != nil && now.Before(st.NotBefore.Time) {
				t.Fatalf("step %d: allowed at %s before NotBefore %s", i, now, st.NotBefore)
			}
			if !c.Shutdown {
				if winStart.IsZero() || now.Sub(winStart) >= p.Window {
					winStart, inWindow = now, 0
				}
				inWindow++
				if !v.ReplaceNow && inWindow > p.Cap {
					t.Fatalf("step %d: capped replacement %d in the window opened at %s, cap %d", i, inWindow, winStart, p.Cap)
				}
			}
			st = p.Record(now, st, c, types.UID(fmt.Sprint("pod-", i)), annotation)
			records++
			if st.Total != records {
				t.Fatalf("step %d: Total %d after %d replacements", i, st.Total, records)
			}
		}
	})
}

func checkBackoff(t *testing.T, p Policy) {
	prev := time.Duration(0)
	for n := int32(1); n < 80; n++ {
		d := p.Backoff(n)
		if d < p.InitialBackoff || d > p.MaxBackoff || d < prev {
			t.Fatalf("Backoff(%d) = %s after %s, want within [%s, %s] and not shrinking", n, d, prev, p.InitialBackoff, p.MaxBackoff)
		}
		prev = d
	}
}
