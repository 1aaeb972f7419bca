package fleet_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/managerproc"
)

// Sharding timings of the sharding specs: short, so that a takeover fits
// the spec's time; the bound is the issue's, lease duration + probe
// interval + 5 s.
const (
	shardLease = 6 * time.Second
	shardSync  = 2 * time.Second
)

// shardLabel selects the sharding specs; with it in the label filter the
// suite starts shardWorkloads workload clusters instead of four.
const (
	shardLabel     = "shard"
	shardWorkloads = 6
)

// shardingSelected reports whether this run is the sharding suite: the
// shard label is in the label filter (make test-e2e-shard), or every focus
// names "shard", as the sharding specs' texts do, so that one of them can
// be run alone with -ginkgo.focus.
func shardingSelected() bool {
	if strings.Contains(GinkgoLabelFilter(), shardLabel) {
		return true
	}
	sc, _ := GinkgoConfiguration()
	focus := sc.FocusStrings
	for _, f := range focus {
		if !strings.Contains(strings.ToLower(f), shardLabel) {
			return false
		}
	}
	return len(focus) > 0
}

// shardSpecs run three etcdfleet-manager processes with --shard. They run
// after the handover specs, without the suite's in-process manager.
func shardSpecs() {
	Context("with the clusters sharded over three manager replicas", Label(shardLabel), Ordered, func() {
		var (
			bin      string
			replicas []*managerProcess
		)
		start := func(ctx context.Context, id string) *managerProcess {
			m := startManagerProcess(ctx, bin, id, true, "--shard", "--shard-replica-id="+id,
				"--shard-lease-duration="+shardLease.String(), "--shard-sync-interval="+shardSync.String())
			DeferCleanup(m.Kill)
			return m
		}
		BeforeAll(func(ctx SpecContext) {
			if !shardingSelected() {
				Skip("run with -ginkgo.label-filter=" + shardLabel + " (make test-e2e-shard): it needs its own sandbox of " + fmt.Sprint(shardWorkloads) + " clusters")
			}
			stopSuiteManager()
			bin = buildManager(ctx)
			for _, id := range []string{"r1", "r2", "r3"} {
				replicas = append(replicas, start(ctx, id))
			}
		}, NodeTimeout(5*time.Minute))

		It("engages every cluster in exactly one replica, keeps the fleet bound across replicas through a reboot and a replica killed mid-heal, takes its clusters over within the bound, and rebalances 3→2→3 without double engagement", func(ctx SpecContext) {
			baseline(ctx)
			owners := expectOwnedOnce(ctx, replicas)
			AddReportEntry("ownership", fmt.Sprint(owners))

			logs, before, rebootAt, load := rebootMidHeal(ctx)
			victim := busiest(replicas)
			By(fmt.Sprintf("SIGKILLing %s mid-heal, which owns %v", victim.Name, victim.Current()))
			orphans := victim.Current()
			killedAt := time.Now()
			victim.Kill()
			survivors := without(replicas, victim)
			bound := shardLease + managerConfig().Clusters.ProbeInterval + 5*time.Second
			for _, w := range orphans {
				Eventually(func() string { return engagedBy(survivors, w) }).WithContext(ctx).WithTimeout(bound).
					WithPolling(50*time.Millisecond).ShouldNot(BeEmpty(), "cluster %s taken over within %s", w, bound)
			}
			AddReportEntry("takeover", fmt.Sprintf("%v within %s of the kill (bound %s)", orphans, time.Since(killedAt).Round(100*time.Millisecond), bound))
			expectHealedWithinBound(ctx, logs, before, rebootAt, load)
			expectOwnedOnce(ctx, survivors)

			By("restarting the killed replica, then scaling 3→2 (a graceful stop) and back to 3")
			// A replica that comes back under its name ranks first for the
			// same clusters as before (HRW), so getting them back is the
			// rebalance.
			replicas = append(survivors, rejoin(ctx, start, victim, orphans))
			expectOwnedOnce(ctx, replicas)
			leaving := replicas[0]
			had := leaving.Current()
			leaving.Stop()
			expectOwnedOnce(ctx, replicas[1:])
			replicas = append(replicas[1:], rejoin(ctx, start, leaving, had))
			expectOwnedOnce(ctx, replicas)
			expectNoOverlap(append(replicas, victim, leaving))
			expectKeys(ctx, workloads...)
		}, SpecTimeout(8*time.Minute))
	})
}

// rejoin starts a replica under old's name and waits until it owns had
// again, the clusters old owned.
func rejoin(ctx context.Context, start func(context.Context, string) *managerProcess, old *managerProcess, had []string) *managerProcess {
	GinkgoHelper()
	m := start(ctx, old.Name)
	Eventually(m.Current).WithContext(ctx).WithTimeout(time.Minute).WithPolling(100*time.Millisecond).
		Should(ConsistOf(had), "%s rejoined and took back its clusters", m.Name)
	return m
}

// engagedBy names the process among ms that has w engaged now, or "".
func engagedBy(ms []*managerProcess, w string) string {
	for _, m := range ms {
		if slices.Contains(m.Current(), w) {
			return m.Name
		}
	}
	return ""
}

// expectOwnedOnce waits until every workload cluster is engaged by exactly
// one of ms and its FleetCluster names that replica, and returns who owns
// what.
func expectOwnedOnce(ctx context.Context, ms []*managerProcess) map[string][]string {
	GinkgoHelper()
	owners := map[string][]string{}
	Eventually(func(g Gomega) {
		owners = map[string][]string{}
		for _, m := range ms {
			for _, w := range m.Current() {
				owners[w] = append(owners[w], m.Name)
			}
		}
		for _, w := range workloads {
			g.Expect(owners[w]).To(HaveLen(1), "cluster %s engaged by %v", w, owners[w])
			fc := &fleetv1.FleetCluster{}
			g.Expect(mgmtC.Get(ctx, types.NamespacedName{Namespace: secretNS, Name: w}, fc)).To(Succeed())
			g.Expect(fc.Status.Replica).To(Equal(owners[w][0]), "FleetCluster %s names its owner", w)
		}
		f := &fleetv1.Fleet{}
		g.Expect(mgmtC.Get(ctx, types.NamespacedName{Name: fleetv1.FleetName}, f)).To(Succeed())
		var total int32
		for _, r := range f.Status.Replicas {
			total += r.Clusters
		}
		g.Expect(total).To(BeEquivalentTo(len(workloads)), "the Fleet counts every cluster under its replica: %+v", f.Status.Replicas)
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	return owners
}

// busiest returns the process that owns the most clusters now.
func busiest(ms []*managerProcess) *managerProcess {
	best := ms[0]
	for _, m := range ms[1:] {
		if len(m.Current()) > len(best.Current()) {
			best = m
		}
	}
	return best
}

func without(ms []*managerProcess, drop *managerProcess) []*managerProcess {
	return slices.DeleteFunc(slices.Clone(ms), func(m *managerProcess) bool { return m == drop })
}

// expectNoOverlap checks that no cluster was ever engaged by two processes
// at once, from every engagement their logs recorded (each span covers the
// real engagement: it ends only once the disengagement is logged).
func expectNoOverlap(ms []*managerProcess) {
	GinkgoHelper()
	type span struct {
		managerproc.Engagement
		proc int // a restarted replica keeps its name but is another process
	}
	var all []span
	for i, m := range ms {
		for _, e := range m.Engagements() {
			all = append(all, span{e, i})
		}
	}
	for i, a := range all {
		for _, b := range all[i+1:] {
			if a.Cluster == b.Cluster && a.proc != b.proc && a.From.Before(b.To) && b.From.Before(a.To) {
				Fail(fmt.Sprintf("cluster %s engaged by %s (%s–%s) and %s (%s–%s) at once", a.Cluster,
					a.Process, a.From.Format(time.StampMilli), a.To.Format(time.StampMilli),
					b.Process, b.From.Format(time.StampMilli), b.To.Format(time.StampMilli)))
			}
		}
	}
	AddReportEntry("engagements", fmt.Sprintf("%d, none overlapping", len(all)))
}
