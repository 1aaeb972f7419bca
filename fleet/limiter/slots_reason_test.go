package limiter

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestSlotsDecisionSaysWhyItWaits: a waiting snapshot's Decision names the
// cap or limit that holds it, so its WaitingForSlot condition tells a user
// which one; while it waits for its cluster's cap, the other clusters'
// snapshots still start in turn.
func TestSlotsDecisionSaysWhyItWaits(t *testing.T) {
	s, clk := capSlots(2, 1, 1, nil)
	exp := clk.Now().Add(time.Hour)
	ask := func(c, ns string, i int) string {
		d := s.Acquire(context.Background(), snapIn(c, ns, i, exp))
		if d.Delay == 0 {
			return ""
		}
		return d.Reason
	}
	if r := ask("stalled", "a", 0); r != "" {
		t.Fatalf("first snapshot waits: %s", r)
	}
	clk.Advance(time.Second)
	if r := ask("stalled", "b", 1); !strings.Contains(r, "cluster stalled already holds its 1 snapshot slot") ||
		!strings.Contains(r, "snapshots.maxPerCluster") {
		t.Errorf("a snapshot over its cluster's cap waits with %q", r)
	}
	if r := ask("quiet", "a", 0); r != "" {
		t.Fatalf("another cluster's snapshot waits behind the capped one: %s", r)
	}
	clk.Advance(time.Second)
	if r := ask("other", "a", 0); !strings.Contains(r, "snapshots.maxConcurrent") {
		t.Errorf("a snapshot with every fleet slot taken waits with %q", r)
	}
	if r := ask("stalled", "b", 1); !strings.Contains(r, "maxPerCluster") {
		t.Errorf("the capped cluster's snapshot got past its cap: %q", r)
	}
}

// TestSlotsDecisionNamesTheNamespaceCap: with the cluster cap raised, a
// second snapshot of one namespace waits for the namespace's cap.
func TestSlotsDecisionNamesTheNamespaceCap(t *testing.T) {
	s, clk := capSlots(4, 3, 1, nil)
	exp := clk.Now().Add(time.Hour)
	if d := s.Acquire(context.Background(), snapIn("c", "tenant", 0, exp)); d.Delay != 0 {
		t.Fatalf("first snapshot waits: %s", d.Reason)
	}
	clk.Advance(time.Second)
	d := s.Acquire(context.Background(), snapIn("c", "tenant", 1, exp))
	if want := "namespace tenant of cluster c already holds its 1 snapshot slot (snapshots.maxPerNamespace)"; d.Reason != want {
		t.Errorf("reason %q, want %q", d.Reason, want)
	}
}

// TestSlotsConfigCaps: the caps are settings with their defaults, passed
// to the Slots, and a cap below 1 (which would halt a cluster's backups)
// is refused naming its key.
func TestSlotsConfigCaps(t *testing.T) {
	c := DefaultSlotsConfig()
	if c.MaxPerCluster != DefaultMaxSnapshotsPerCluster || c.MaxPerNamespace != DefaultMaxSnapshotsPerNamespace {
		t.Errorf("default caps %d and %d", c.MaxPerCluster, c.MaxPerNamespace)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.MaxPerCluster, c.MaxPerNamespace = 3, 2
	if st := NewSlots(c.Options()).Stats(); st.MaxPerCluster != 3 || st.MaxPerNamespace != 2 {
		t.Errorf("caps in force %d and %d, want 3 and 2", st.MaxPerCluster, st.MaxPerNamespace)
	}
	for _, bad := range []SlotsConfig{{MaxConcurrent: 4, StartsPerMinute: 6, MaxPerCluster: 0, MaxPerNamespace: 1},
		{MaxConcurrent: 4, StartsPerMinute: 6, MaxPerCluster: 1, MaxPerNamespace: -1}} {
		err := bad.Validate()
		if err == nil || !strings.Contains(err.Error(), "snapshots.maxPerCluster") {
			t.Errorf("%+v: got %v, want a refusal naming the caps", bad, err)
		}
	}
}
