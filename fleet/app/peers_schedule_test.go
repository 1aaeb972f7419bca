package app

import (
	"testing"
	"time"
)

// TestListScheduleListsAfterEachWrite: with a share the registry lists on
// its interval and also ConfirmDelay after a write returned, the first
// list a raise may be applied on; without one, on every tick.
func TestListScheduleListsAfterEachWrite(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	s := &listSchedule{tick: 100 * time.Millisecond, every: 500 * time.Millisecond, confirm: 250 * time.Millisecond}
	var lists []int
	for ms := 0; ms <= 1500; ms += 100 {
		if ms == 600 {
			s.wrote(at(620)) // a write sent on this tick returned 20 ms later
		}
		if s.listDue(at(ms)) {
			s.listing(at(ms))
			lists = append(lists, ms)
		}
	}
	want := []int{0, 500, 900, 1400}
	if len(lists) != len(want) {
		t.Fatalf("listed at %v ms, want %v", lists, want)
	}
	for i := range want {
		if lists[i] != want[i] {
			t.Fatalf("listed at %v ms, want %v", lists, want)
		}
	}

	plain := &listSchedule{tick: time.Second, every: time.Second}
	plain.wrote(at(0))
	for ms := 0; ms <= 3000; ms += 1000 {
		if !plain.listDue(at(ms)) {
			t.Fatalf("without a share, no list due on the tick at %d ms", ms)
		}
		plain.listing(at(ms))
	}
}
