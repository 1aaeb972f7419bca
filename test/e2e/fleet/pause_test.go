package fleet_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/dashboard"
)

// pausedFor is how long a paused cluster is watched for untouched Pods
// after the reboot; it is longer than memberctl's PausedRetry (5 s), the
// paused members' requeue.
const pausedFor = 7 * time.Second

func pauseSpecs() {
	// Paused per cluster.
	It("leaves a cluster paused by its Secret untouched through a fleet reboot until it is unpaused, then heals it", func(ctx SpecContext) {
		baseline(ctx)
		const paused = "w2"
		others := []string{"w1", "w3", "w4"}
		DeferCleanup(func(ctx context.Context) { setClusterPaused(ctx, paused, false) })
		setClusterPaused(ctx, paused, true)
		Eventually(func() bool { st, _ := fm.Provider.State(paused); return st.Paused }).WithContext(ctx).
			WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).Should(BeTrue())
		expectRow(ctx, paused, fleetv1.ConditionPaused, metav1.ConditionTrue, dashboard.ReasonClusterPaused)

		ids := memberIDs(ctx, workloads...)
		before := podUIDs(ctx, workloads...)
		logs := watchPods(ctx, workloads...)
		load := startWorkloads(ctx, workloads...)
		rebootAt := reboot(ctx, workloads...)
		healed := waitHealed(ctx, rebootAt, before, 3*time.Minute, others...)
		AddReportEntry("heal time of the unpaused clusters", durations(healed))

		By("keeping the paused cluster's terminal Pods: no delete reaches its apiserver")
		Consistently(func(g Gomega) {
			terminalPodsStay(ctx, g, paused, before[paused])
			g.Expect(logs[paused].Count(watch.Deleted)).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(pausedFor).WithPolling(250 * time.Millisecond).Should(Succeed())
		Expect(logs[paused].Events()).NotTo(BeEmpty(), "the watch on %s works: it saw the reboot", paused)

		By("unpausing it: it heals")
		unpauseAt := time.Now()
		setClusterPaused(ctx, paused, false)
		h := waitHealed(ctx, unpauseAt, before, 2*time.Minute, paused)
		load.StopAndCheck()
		AddReportEntry("heal time after unpausing the cluster", durations(h))
		expectKeys(ctx, workloads...)
		expectSameMembers(ctx, ids)
		expectRow(ctx, paused, fleetv1.ConditionPaused, metav1.ConditionFalse)
	}, SpecTimeout(5*time.Minute))

	// Paused fleet-wide.
	It("leaves every cluster untouched through a fleet reboot while the Fleet is paused, then heals them all", func(ctx SpecContext) {
		baseline(ctx)
		DeferCleanup(func(ctx context.Context) { setFleetPaused(ctx, false) })
		setFleetPaused(ctx, true)
		// The dashboard reads spec.paused from the same cache as the
		// reconcilers' pause check: once it shows, the check sees it.
		Eventually(func(g Gomega) {
			f := &fleetv1.Fleet{}
			g.Expect(mgmtC.Get(ctx, types.NamespacedName{Name: fleetv1.FleetName}, f)).To(Succeed())
			g.Expect(apimeta.IsStatusConditionTrue(f.Status.Conditions, fleetv1.ConditionPaused)).To(BeTrue())
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		for _, w := range workloads {
			expectRow(ctx, w, fleetv1.ConditionPaused, metav1.ConditionTrue, fleetv1.ReasonFleetPaused)
		}

		ids := memberIDs(ctx, workloads...)
		before := podUIDs(ctx, workloads...)
		logs := watchPods(ctx, workloads...)
		load := startWorkloads(ctx, workloads...)
		reboot(ctx, workloads...)

		By("keeping every terminal Pod: no delete reaches any apiserver")
		Consistently(func(g Gomega) {
			for _, w := range workloads {
				terminalPodsStay(ctx, g, w, before[w])
				g.Expect(logs[w].Count(watch.Deleted)).To(BeEmpty(), "cluster %s", w)
			}
		}).WithContext(ctx).WithTimeout(pausedFor).WithPolling(250 * time.Millisecond).Should(Succeed())

		By("unpausing the Fleet: every cluster heals")
		unpauseAt := time.Now()
		setFleetPaused(ctx, false)
		healed := waitHealed(ctx, unpauseAt, before, 3*time.Minute, workloads...)
		AddReportEntry("heal time after unpausing the Fleet", durations(healed))
		load.StopAndCheck()
		expectKeys(ctx, workloads...)
		expectSameMembers(ctx, ids)
	}, SpecTimeout(5*time.Minute))
}
