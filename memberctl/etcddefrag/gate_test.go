package etcddefrag

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// recordingGate answers every request with delay and records it.
type recordingGate struct {
	delay time.Duration
	asked []gate.Request
}

func (g *recordingGate) Reserve(_ context.Context, r gate.Request) gate.Decision {
	g.asked = append(g.asked, r)
	return gate.Decision{Delay: g.delay, Cancel: func() {}}
}

// TestDefragAsksTheSharedGate: a member that will be defragmented waits
// for the gate's token (a planned action, or a heal when the cluster is
// out of space) and for an unpaused cluster; one under the thresholds is
// only skipped, and asks nothing.
func TestDefragAsksTheSharedGate(t *testing.T) {
	newRun := func(g gate.Gate, paused bool) *run {
		cl := &workload.Cluster{Name: "w1", Gate: g, Paused: func() bool { return paused }}
		d := &v1alpha1.EtcdDefrag{}
		d.Namespace, d.Spec.ClusterRef.Name = "ns", "main"
		return &run{o: DefaultOptions(), cl: cl, d: d, orig: d.DeepCopy()}
	}
	v := testView(1, "main-a")
	m := &v.members[0]
	m.status.DBSize, m.status.DBSizeInUse = 100<<20, 10<<20

	g := &recordingGate{delay: 3 * time.Second}
	st := newRun(g, false)
	res, wait := st.mayDefrag(context.Background(), v, m)
	if !wait || res.RequeueAfter != 3*time.Second {
		t.Fatalf("without a token: wait %v, requeue %s", wait, res.RequeueAfter)
	}
	if len(g.asked) != 1 || g.asked[0].Action != gate.Defrag || !g.asked[0].Action.Planned() || g.asked[0].Member != "main-a" || g.asked[0].Cluster != "w1" {
		t.Fatalf("asked %+v", g.asked)
	}
	if c := st.d.Status.Conditions; len(c) == 0 || !strings.Contains(c[0].Message, "rate limiter") {
		t.Fatalf("the wait is not said: %+v", c)
	}

	m.status.Errors = []string{"memberID:1 alarm:NOSPACE"}
	g.delay = 0
	if _, wait := newRun(g, false).mayDefrag(context.Background(), v, m); wait {
		t.Fatal("waited with a token")
	}
	if a := g.asked[len(g.asked)-1].Action; a != gate.NoSpaceDefrag || a.Planned() {
		t.Fatalf("an out-of-space cluster's defrag is a heal, asked as %s", a)
	}

	g.asked = nil
	if _, wait := newRun(g, true).mayDefrag(context.Background(), v, m); !wait || len(g.asked) != 0 {
		t.Fatalf("paused: wait %v, asked %+v", wait, g.asked)
	}

	st = newRun(g, false)
	st.d.Spec.DefragThresholds.MinFragmentationPercent = ptr.To[int32](99)
	if _, wait := st.mayDefrag(context.Background(), v, m); wait || len(g.asked) != 0 {
		t.Fatalf("under the thresholds: wait %v, asked %+v", wait, g.asked)
	}
}
