package limiter

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

// capSlots returns Slots with max slots, a start a second and the given
// caps. The spacing bucket starts empty, so it is one second on.
func capSlots(max, perCluster, perNamespace int, onGrant func(gate.Request)) (*Slots, *fakeClock) {
	clk := newFakeClock()
	s := NewSlots(SlotOptions{MaxConcurrent: max, StartsPerMinute: 60, MaxPerCluster: perCluster,
		MaxPerNamespace: perNamespace, Now: clk.Now, OnGrant: onGrant})
	clk.Advance(time.Second)
	return s, clk
}

func snapIn(cluster, namespace string, i int, expires time.Time) gate.Slot {
	return gate.Slot{Cluster: cluster, Namespace: namespace, EtcdCluster: "etcd", Name: fmt.Sprintf("s%d", i), Expires: expires}
}

// acquire asks for sl and reports whether it may start now.
func acquire(s *Slots, sl gate.Slot) bool {
	return s.Acquire(context.Background(), sl).Delay == 0
}

// TestSlotsClusterCapPassesOver: a cluster at its cap waits, with its
// reason in Stats, and a free slot goes to another cluster's snapshot
// queued behind it; the capped one is woken when its cluster's snapshot
// ends.
func TestSlotsClusterCapPassesOver(t *testing.T) {
	var woken []string
	s, clk := capSlots(4, 1, 0, func(r gate.Request) { woken = append(woken, r.Cluster+"/"+r.Member) })
	exp := clk.Now().Add(time.Hour)
	if !acquire(s, snapIn("busy", "a", 0, exp)) {
		t.Fatal("first snapshot told to wait with every slot free")
	}
	clk.Advance(time.Second)
	if acquire(s, snapIn("busy", "b", 1, exp)) {
		t.Fatal("a second snapshot of the cluster started beside the first with a cap of 1")
	}
	if got := s.Stats().WaitingFor; got[WaitClusterCap] != 1 || got[WaitFleetLimit] != 0 {
		t.Errorf("waiting %v, want 1 for ClusterCap", got)
	}
	if !acquire(s, snapIn("quiet", "a", 0, exp)) {
		t.Fatal("another cluster's snapshot waits behind a capped one")
	}
	clk.Advance(time.Second)
	s.Release(snapIn("busy", "a", 0, exp))
	if !slices.Equal(woken, []string{"busy/s1"}) {
		t.Fatalf("woken %v, want busy/s1 once its cluster's snapshot ended", woken)
	}
	if !acquire(s, snapIn("busy", "b", 1, exp)) {
		t.Fatal("the woken snapshot told to wait")
	}
}

// TestSlotsCappedClusterKeepsItsTurn: a cluster passed over for its cap is
// not sent to the back of the round-robin: once its snapshot ends, its
// waiting one starts before those of clusters served after it.
func TestSlotsCappedClusterKeepsItsTurn(t *testing.T) {
	var woken []string
	s, clk := capSlots(2, 1, 0, func(r gate.Request) { woken = append(woken, r.Cluster+"/"+r.Member) })
	exp := clk.Now().Add(time.Hour)
	ask := func(c string, i int) bool { return acquire(s, snapIn(c, "a", i, exp)) }
	end := func(c string, i int) { clk.Advance(time.Second); s.Release(snapIn(c, "a", i, exp)) }
	if !ask("busy", 0) || ask("busy", 1) {
		t.Fatal("busy: want s0 started, s1 waiting")
	}
	clk.Advance(time.Second)
	if !ask("x", 0) || ask("x", 1) || ask("y", 0) || ask("y", 1) {
		t.Fatal("x, y: want x/s0 started, the rest waiting")
	}
	// Each end frees a slot for the front eligible cluster, which claims it.
	end("x", 0) // y, never served, goes first
	ask("y", 0)
	end("y", 0) // busy is capped: passed over for x
	ask("x", 1)
	end("busy", 0) // busy was passed over, not served: before y
	if want := []string{"y/s0", "x/s1", "busy/s1"}; !slices.Equal(woken, want) {
		t.Fatalf("grant order %v, want %v", woken, want)
	}
}

// TestSlotsNamespaceCap: with room in the cluster, a namespace at its cap
// waits while the cluster's other namespaces start, and its next snapshot
// starts when its running one ends.
func TestSlotsNamespaceCap(t *testing.T) {
	var woken []string
	s, clk := capSlots(4, 3, 1, func(r gate.Request) { woken = append(woken, r.Namespace+"/"+r.Member) })
	exp := clk.Now().Add(time.Hour)
	if !acquire(s, snapIn("c", "x", 0, exp)) {
		t.Fatal("x/s0 told to wait with every slot free")
	}
	clk.Advance(time.Second)
	if acquire(s, snapIn("c", "x", 1, exp)) {
		t.Fatal("x/s1 started beside x/s0 with a namespace cap of 1")
	}
	if !acquire(s, snapIn("c", "y", 0, exp)) {
		t.Fatal("y/s0 waits behind x/s1, which its namespace cap holds")
	}
	st := s.Stats()
	if st.Running != 2 || st.WaitingFor[WaitNamespaceCap] != 1 {
		t.Errorf("running %d, waiting %v; want 2 running and 1 for NamespaceCap", st.Running, st.WaitingFor)
	}
	clk.Advance(time.Second)
	s.Release(snapIn("c", "x", 0, exp))
	if !slices.Equal(woken, []string{"x/s1"}) {
		t.Fatalf("woken %v, want x/s1 once x/s0 ended", woken)
	}
	if !acquire(s, snapIn("c", "x", 1, exp)) {
		t.Fatal("the woken snapshot told to wait")
	}
}

// TestSlotsNamespaceCapPerCluster: the namespace cap counts a namespace of
// one workload cluster only; the same name in another cluster is another
// tenant.
func TestSlotsNamespaceCapPerCluster(t *testing.T) {
	s, clk := capSlots(4, 2, 1, nil)
	exp := clk.Now().Add(time.Hour)
	if !acquire(s, snapIn("c1", "apps", 0, exp)) {
		t.Fatal("c1/apps told to wait with every slot free")
	}
	clk.Advance(time.Second)
	if !acquire(s, snapIn("c2", "apps", 0, exp)) {
		t.Fatal("c2/apps waits for c1/apps: the namespace cap crossed clusters")
	}
}

// TestSlotsCapCountsUnclaimedGrants: a grant not yet claimed takes its
// cluster's cap, so a cluster never gets two grants before it claims one;
// if the grant is never claimed, GrantTTL frees it for the next snapshot.
func TestSlotsCapCountsUnclaimedGrants(t *testing.T) {
	s, clk := capSlots(4, 1, 0, nil)
	exp := clk.Now().Add(time.Hour)
	s.Hold(snapIn("c", "a", 0, exp))
	for i := 1; i <= 2; i++ {
		if acquire(s, snapIn("c", "a", i, exp)) {
			t.Fatalf("s%d started beside a held slot with a cap of 1", i)
		}
	}
	s.Release(snapIn("c", "a", 0, exp)) // grants s1, which does not claim
	clk.Advance(2 * time.Second)
	if acquire(s, snapIn("c", "a", 2, exp)) {
		t.Fatal("s2 started while s1's grant is unclaimed")
	}
	if st := s.Stats(); st.Unclaimed != 1 || st.WaitingFor[WaitClusterCap] != 1 {
		t.Errorf("unclaimed %d, waiting %v; want 1 and 1 for ClusterCap", st.Unclaimed, st.WaitingFor)
	}
	clk.Advance(DefaultGrantTTL + sweepInterval)
	if !acquire(s, snapIn("c", "a", 2, exp)) {
		t.Fatal("s2 still waits after s1's grant expired unclaimed")
	}
}

// TestSlotsWaitingMetricByReason: the waiting gauge splits by reason and
// exports every reason, zeros included; a pedantic registry checks that
// what is collected matches what is described.
func TestSlotsWaitingMetricByReason(t *testing.T) {
	s, clk := capSlots(4, 1, 0, nil)
	reg := prometheus.NewPedanticRegistry()
	if err := s.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	exp := clk.Now().Add(time.Hour)
	acquire(s, snapIn("c", "a", 0, exp))
	acquire(s, snapIn("c", "a", 1, exp))
	acquire(s, snapIn("d", "a", 0, exp)) // the spacing: its turn comes in a second
	want := `
# HELP etcdfleet_snapshot_starts_waiting Snapshots waiting for a start slot, by reason: FleetLimit (the fleet-wide limits), ClusterCap or NamespaceCap (their workload cluster or namespace runs as many snapshots as its cap allows).
# TYPE etcdfleet_snapshot_starts_waiting gauge
etcdfleet_snapshot_starts_waiting{reason="ClusterCap"} 1
etcdfleet_snapshot_starts_waiting{reason="FleetLimit"} 1
etcdfleet_snapshot_starts_waiting{reason="NamespaceCap"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "etcdfleet_snapshot_starts_waiting"); err != nil {
		t.Error(err)
	}
}
