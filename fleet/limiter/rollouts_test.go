package limiter

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/etcdfleet/etcdfleet/memberctl/gate"
)

type rolloutClock struct{ t time.Time }

func (c *rolloutClock) now() time.Time          { return c.t }
func (c *rolloutClock) advance(d time.Duration) { c.t = c.t.Add(d) }
func aRoll(cluster, name string, done int) gate.Roll {
	return gate.Roll{Cluster: cluster, Namespace: "ns", EtcdCluster: name, Done: done, Total: 3}
}

func newTestRollouts(o RolloutOptions) (*Rollouts, *rolloutClock) {
	c := &rolloutClock{t: time.Unix(1_000_000, 0)}
	o.Now = c.now
	return NewRollouts(o), c
}

func mustJoinWave(t *testing.T, r *Rollouts, ro gate.Roll) {
	t.Helper()
	if d := r.Join(context.Background(), ro); d.Delay != 0 {
		t.Fatalf("%s/%s: waits (%s), want its place", ro.Cluster, ro.EtcdCluster, d.Reason)
	}
}

func mustWaitWave(t *testing.T, r *Rollouts, ro gate.Roll, reason string) {
	t.Helper()
	d := r.Join(context.Background(), ro)
	if d.Delay <= 0 {
		t.Fatalf("%s/%s: got a place, want it to wait", ro.Cluster, ro.EtcdCluster)
	}
	if !strings.Contains(d.Reason, reason) {
		t.Fatalf("%s/%s: reason %q, want it to say %q", ro.Cluster, ro.EtcdCluster, d.Reason, reason)
	}
}

func TestRolloutsNeverExceedMaxConcurrentClusters(t *testing.T) {
	r, c := newTestRollouts(RolloutOptions{MaxConcurrentClusters: 2})
	mustJoinWave(t, r, aRoll("a", "etcd", 0))
	mustJoinWave(t, r, aRoll("b", "etcd", 0))
	mustWaitWave(t, r, aRoll("c", "etcd", 0), "2 of 2 workload clusters roll")
	// A second EtcdCluster of a workload cluster that rolls takes no new place.
	mustJoinWave(t, r, aRoll("a", "other", 0))
	if st := r.Stats(); st.RollingClusters != 2 || st.Rolls != 3 || st.Waiting != 1 {
		t.Fatalf("stats %+v, want 2 clusters, 3 rolls, 1 waiting", st)
	}
	c.advance(time.Second)
	r.Leave(aRoll("a", "etcd", 3))
	mustWaitWave(t, r, aRoll("c", "etcd", 0), "2 of 2") // a/other still rolls
	r.Leave(aRoll("a", "other", 3))
	mustJoinWave(t, r, aRoll("c", "etcd", 0))
}

func TestRolloutsGivePlacesInTheOrderAsked(t *testing.T) {
	r, c := newTestRollouts(RolloutOptions{MaxConcurrentClusters: 1})
	mustJoinWave(t, r, aRoll("a", "etcd", 0))
	mustWaitWave(t, r, aRoll("b", "etcd", 0), "1 of 1")
	c.advance(time.Second)
	mustWaitWave(t, r, aRoll("c", "etcd", 0), "1 of 1")
	r.Leave(aRoll("a", "etcd", 3))
	mustWaitWave(t, r, aRoll("c", "etcd", 0), "asked first")
	mustJoinWave(t, r, aRoll("b", "etcd", 0))
}

func TestRolloutsKeepAStartedRollsPlaceBeyondTheLimit(t *testing.T) {
	r, _ := newTestRollouts(RolloutOptions{MaxConcurrentClusters: 1})
	mustJoinWave(t, r, aRoll("a", "etcd", 0))
	started := aRoll("b", "etcd", 1)
	started.Started = true // a restarted manager finds b half rolled
	mustJoinWave(t, r, started)
	if st := r.Stats(); st.RollingClusters != 2 {
		t.Fatalf("stats %+v, want both held", st)
	}
}

func TestRolloutsPauseTheWaveWhenRollsFail(t *testing.T) {
	r, c := newTestRollouts(RolloutOptions{MaxConcurrentClusters: 4, MaxFailedClusters: 1, StepTimeout: 10 * time.Minute, HoldTTL: time.Hour})
	mustJoinWave(t, r, aRoll("a", "etcd", 0))
	mustJoinWave(t, r, aRoll("b", "etcd", 0))
	c.advance(9 * time.Minute)
	mustJoinWave(t, r, aRoll("a", "etcd", 1)) // a progresses, b does not
	mustJoinWave(t, r, aRoll("b", "etcd", 0))
	c.advance(2 * time.Minute)
	mustJoinWave(t, r, aRoll("c", "etcd", 0)) // one failure (b) is within the budget
	c.advance(9 * time.Minute)
	mustJoinWave(t, r, aRoll("a", "etcd", 1))
	mustWaitWave(t, r, aRoll("d", "etcd", 0), "paused: 2 roll(s) made no progress")
	if st := r.Stats(); !st.Paused || len(st.Failed) != 2 {
		t.Fatalf("stats %+v, want paused with two failed", st)
	}
	mustJoinWave(t, r, aRoll("b", "etcd", 1)) // b recovers: one failure left
	mustJoinWave(t, r, aRoll("d", "etcd", 0))
}

func TestRolloutsFreeThePlaceOfARollThatStoppedAsking(t *testing.T) {
	r, c := newTestRollouts(RolloutOptions{MaxConcurrentClusters: 1, HoldTTL: time.Minute, StepTimeout: time.Hour})
	mustJoinWave(t, r, aRoll("a", "etcd", 0))
	mustWaitWave(t, r, aRoll("b", "etcd", 0), "1 of 1")
	c.advance(30 * time.Second)
	mustWaitWave(t, r, aRoll("b", "etcd", 0), "1 of 1")
	c.advance(31 * time.Second)
	mustJoinWave(t, r, aRoll("b", "etcd", 0))
}

func TestRolloutsShareAcrossReplicas(t *testing.T) {
	r, _ := newTestRollouts(RolloutOptions{MaxConcurrentClusters: 4})
	r.SetShare(1, 4)
	if st := r.Stats(); st.MaxConcurrentClusters != 1 {
		t.Fatalf("share of 1/4 clusters: max %d, want 1", st.MaxConcurrentClusters)
	}
	r.SetShare(2, 4)
	mustJoinWave(t, r, aRoll("a", "etcd", 0))
	mustJoinWave(t, r, aRoll("b", "etcd", 0))
	mustWaitWave(t, r, aRoll("c", "etcd", 0), "2 of 2")
	r.ForgetCluster("a")
	mustJoinWave(t, r, aRoll("c", "etcd", 0))
}

func TestRolloutConfigValidate(t *testing.T) {
	if err := DefaultRolloutConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []RolloutConfig{{MaxConcurrentClusters: 0, StepTimeout: time.Minute}, {MaxConcurrentClusters: 1, MaxFailedClusters: -1, StepTimeout: time.Minute}, {MaxConcurrentClusters: 1}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}
