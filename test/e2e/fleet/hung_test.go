package fleet_test

import (
	"context"
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
)

func hungSpecs() {
	// The spec
	// "heals the rest of the fleet at its usual pace while one apiserver hangs and one cluster's credentials are forbidden"
	// hangs an apiserver at reboot time and times the others from their
	// registration after it was dropped; this one hangs
	// it at the worst moment: engaged, mid-heal, its first replacement just
	// made. The limiter goes on granting its waiting members a token per
	// round, and each grant is a reconcile that blocks on the hung
	// apiserver: within seconds more of them than there are workers, while
	// the cluster stays engaged until its probes give up (30 s here, 50 s
	// by default). Whatever it holds (workers, tokens), the others must
	// heal within what the limiter itself allows.
	It("heals three rebooted clusters within the limiter's bound while the fourth, holding more members than there are workers, hangs after its first replacement", func(ctx SpecContext) {
		baseline(ctx)
		const hung = "w2"
		good := []string{"w1", "w3", "w4"}
		DeferCleanup(func() { Expect(sb.Cluster(hung).Heal()).To(Succeed()) })
		ids := memberIDs(ctx, workloads...)
		before := podUIDs(ctx, workloads...)
		Expect(len(before[hung])).To(BeNumerically(">", managerConfig().Workers),
			"the hung cluster must hold more members than there are workers")
		logs := watchPods(ctx, workloads...)
		load := startWorkloads(ctx, workloads...)

		By("rebooting every node of w1..w4, and hanging w2's apiserver at its first Pod delete")
		hungAt := hangAtFirstDelete(ctx, hung, logs[hung])
		rebootAt := reboot(ctx, workloads...)
		var hangAt time.Time
		Eventually(hungAt).WithContext(ctx).WithTimeout(time.Minute).Should(Receive(&hangAt))
		healed := waitHealed(ctx, rebootAt, before, 2*time.Minute, good...)

		// The limiter's lower bound on the heal of the whole fleet, as the
		// benchmark's: every rebooted member but the burst is paced at rate
		// (those the hung cluster is granted included), and the last one
		// still has to start; plus 10 s for the reboot itself (graceful
		// stop, outage) and the reconciles.
		all := 0
		for _, w := range workloads {
			all += len(before[w])
		}
		start := etcdStart(logs, before, good...)
		bound := time.Duration(float64(all-limiterBurst)/limiterRate*float64(time.Second)) + start + 10*time.Second
		AddReportEntry("heal time beside a cluster hung mid-heal",
			fmt.Sprintf("%s (per cluster: %s); bound (%d − %d)/%d/s + etcd start %s + 10 s = %s; hung %s after the reboot, %d of its Pods deleted before",
				maxOf(healed).Round(100*time.Millisecond), durations(healed), all, limiterBurst, limiterRate,
				start.Round(10*time.Millisecond), bound.Round(100*time.Millisecond), hangAt.Sub(rebootAt).Round(10*time.Millisecond),
				len(logs[hung].Count(watch.Deleted))))
		for _, w := range good {
			Expect(healed[w]).To(BeNumerically("<=", bound), "heal time of %s beside hung %s", w, hung)
		}
		// Disengaging the hung cluster would free whatever it holds; the
		// point is that nothing it holds matters while it is engaged.
		for _, e := range states.since(hung, hangAt) {
			if e.At.Before(rebootAt.Add(maxOf(healed))) {
				Expect(e.Connected).To(BeTrue(), "%s was disengaged before the others healed: %+v", hung, e)
			}
		}

		By("healing w2's apiserver: it reconnects and heals too")
		Expect(sb.Cluster(hung).Heal()).To(Succeed())
		waitConnected(ctx, 90*time.Second, hung)
		waitHealed(ctx, rebootAt, before, 2*time.Minute, hung)
		load.StopAndCheck()
		expectKeys(ctx, workloads...)
		expectSameMembers(ctx, ids)
	}, SpecTimeout(5*time.Minute))
}

// hangAtFirstDelete hangs cluster w's apiserver as soon as its Pod watch
// shows the first delete, and sends when it did.
func hangAtFirstDelete(ctx context.Context, w string, log *e2eutil.PodLog) <-chan time.Time {
	at := make(chan time.Time, 1)
	go func() {
		defer GinkgoRecover()
		for ctx.Err() == nil {
			if len(log.Count(watch.Deleted)) > 0 {
				Expect(sb.Cluster(w).Hang()).To(Succeed())
				at <- time.Now()
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return at
}

// etcdStart is the median over the named clusters of the start of their
// last replacement, its ADDED → Ready as the apiserver reported them: by
// then the others are up, so it is one member's plain start under the
// fleet's load (as the fleet heal benchmark measures it).
func etcdStart(logs map[string]*e2eutil.PodLog, before map[string]map[string]types.UID, names ...string) time.Duration {
	GinkgoHelper()
	var starts []time.Duration
	for _, w := range names {
		old := map[types.UID]bool{}
		for _, uid := range before[w] {
			old[uid] = true
		}
		var last e2eutil.PodEvent
		ready := map[string]time.Time{}
		for _, e := range logs[w].Events() {
			if old[types.UID(e.UID)] {
				continue
			}
			if e.Type == watch.Added && e.At.After(last.At) {
				last = e
			}
			if _, ok := ready[e.UID]; !ok && e.Ready {
				ready[e.UID] = e.At
			}
		}
		Expect(last.UID).NotTo(BeEmpty(), "no replacement Pod seen in %s", w)
		Expect(ready).To(HaveKey(last.UID), "replacement %s of %s never Ready", last.Name, w)
		starts = append(starts, ready[last.UID].Sub(last.At))
	}
	slices.Sort(starts)
	return starts[len(starts)/2]
}
