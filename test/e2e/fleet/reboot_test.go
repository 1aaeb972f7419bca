package fleet_test

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
)

func rebootSpecs() {
	// The second spec below ("paces the fleet's terminal-Pod deletes ...")
	// judges the deletes the first one's reboot caused.
	Context("when every node of every workload cluster reboots", func() {
		var (
			rebootAt time.Time
			logs     map[string]*e2eutil.PodLog
			members  map[string]*memberLog
		)

		It("heals 4 clusters × 2 EtcdClusters × 3 members left Succeeded or Failed: every EtcdCluster Available, every key, the same member IDs", func(ctx SpecContext) {
			baseline(ctx)
			ids := memberIDs(ctx, workloads...)
			before := podUIDs(ctx, workloads...)
			logs = watchPods(ctx, workloads...)
			members = watchMembers(ctx, workloads...)
			load := startWorkloads(ctx, workloads...)

			By("rebooting every node of w1..w3, and of w4 once the others' Pods queue at the limiter")
			rebootAt = reboot(ctx, "w1", "w2", "w3")
			Eventually(func() int { return len(deletes(logs)) }).WithContext(ctx).WithTimeout(time.Minute).
				WithPolling(10*time.Millisecond).Should(BeNumerically(">=", limiterBurst+limiterRate), "the burst and the first tokens are spent")
			reboot(ctx, "w4")
			// Beside the heal, not before it: waitHealed times each cluster
			// when it sees it healed.
			By("etcdfleetctl status printing every row as the FleetClusters have it, mid-heal")
			statusChecked := make(chan struct{})
			go func() {
				defer GinkgoRecover()
				defer close(statusChecked)
				expectStatusMidHeal(ctx)
			}()
			healed := waitHealed(ctx, rebootAt, before, 2*time.Minute, workloads...)
			<-statusChecked
			heal := maxOf(healed)
			figures.Lock()
			figures.healTime = heal
			figures.Unlock()
			AddReportEntry("fleet reboot heal time", fmt.Sprintf("%s (per cluster: %s)", heal.Round(100*time.Millisecond), durations(healed)))
			load.StopAndCheck()

			By("showing every FleetCluster Ready and the Fleet all quorate")
			for _, w := range workloads {
				expectRow(ctx, w, fleetv1.ConditionReady, metav1.ConditionTrue, fleetv1.ReasonHealthy)
			}
			Eventually(func(g Gomega) {
				f := &fleetv1.Fleet{}
				g.Expect(mgmtC.Get(ctx, types.NamespacedName{Name: fleetv1.FleetName}, f)).To(Succeed())
				g.Expect(f.Status.ClustersQuorate).To(BeEquivalentTo(len(workloads)), "%+v", f.Status)
				g.Expect(f.Status.ClustersConnected).To(BeEquivalentTo(len(workloads)), "%+v", f.Status)
			}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

			By("finding every key and the same member IDs")
			expectKeys(ctx, workloads...)
			expectSameMembers(ctx, ids)

			By("counting one delete per terminal Pod, as the apiservers saw it")
			phases := map[corev1.PodPhase]int{}
			for _, w := range workloads {
				Expect(logs[w].Count(watch.Deleted)).To(HaveLen(len(before[w])), "cluster %s", w)
				for name, n := range logs[w].Count(watch.Deleted) {
					Expect(before[w]).To(HaveKey(name), "cluster %s deleted %s, not an etcd Pod of the reboot", w, name)
					Expect(n).To(Equal(1), "cluster %s: Pod %s deleted %d times", w, name, n)
				}
			}
			for _, d := range deletes(logs) {
				phases[d.Phase]++
			}
			Expect(phases).To(HaveKey(corev1.PodSucceeded), "the reboot left some Pods Succeeded")
			Expect(phases).To(HaveKey(corev1.PodFailed), "the reboot left some Pods Failed")
			Expect(phases[corev1.PodSucceeded]+phases[corev1.PodFailed]).To(Equal(len(deletes(logs))), "only terminal Pods were deleted: %v", phases)

			By("finding a ReplacingTerminalPod Event on the EtcdMember of every replaced Pod, in its own cluster")
			for _, w := range workloads {
				Eventually(func(g Gomega) {
					evs, err := sb.Cluster(w).Clientset.CoreV1().Events(etcdNS).List(ctx, metav1.ListOptions{FieldSelector: "reason=ReplacingTerminalPod"})
					g.Expect(err).NotTo(HaveOccurred())
					seen := map[string]bool{}
					for _, e := range evs.Items {
						g.Expect(e.InvolvedObject.Kind).To(Equal("EtcdMember"))
						g.Expect(e.Source.Component).To(Equal("etcdfleet"))
						seen[e.InvolvedObject.Name] = true
					}
					g.Expect(seen).To(HaveLen(len(before[w])), "cluster %s", w)
				}).WithContext(ctx).WithTimeout(10 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
			}
		}, SpecTimeout(6*time.Minute))

		It("paces the fleet's terminal-Pod deletes at the limiter's rate and burst, and serves every cluster fairly", func() {
			Expect(logs).NotTo(BeNil(), "the fleet reboot spec recorded nothing")
			ds := deletes(logs)
			Expect(ds).To(HaveLen(len(workloads) * 3 * len(etcdNames)))

			By(fmt.Sprintf("never more than burst + rate = %d deletes in any 1 s window", limiterBurst+limiterRate))
			// The busiest half-open window [t, t+1s) starts at some delete.
			worst, worstAt := 0, time.Time{}
			for i := range ds {
				j := i
				for j < len(ds) && ds[j].At.Sub(ds[i].At) < time.Second {
					j++
				}
				if j-i > worst {
					worst, worstAt = j-i, ds[i].At
				}
			}
			span := ds[len(ds)-1].At.Sub(ds[0].At)
			AddReportEntry("terminal-Pod deletes", fmt.Sprintf("%d over %s; at most %d in a 1 s window (from +%s)",
				len(ds), span.Round(10*time.Millisecond), worst, worstAt.Sub(rebootAt).Round(10*time.Millisecond)))
			GinkgoWriter.Println("deletes since the reboot (and when the member first asked the limiter):")
			for _, d := range ds {
				GinkgoWriter.Printf("  +%6.3fs %s %s %s (asked +%.3fs)\n", d.At.Sub(rebootAt).Seconds(), d.Cluster, d.Name, d.Phase,
					members[d.Cluster].asks()[d.Name].Sub(rebootAt).Seconds())
			}
			Expect(worst).To(BeNumerically("<=", limiterBurst+limiterRate), "deletes in the 1 s from +%s", worstAt.Sub(rebootAt))
			// And the limiter really paced them: after the burst, one token
			// per 1/rate. (One token interval covers the jitter between a
			// grant and its delete, the only slack taken here.)
			minSpan := time.Duration(float64(len(ds)-limiterBurst)/limiterRate*float64(time.Second)) - time.Second/limiterRate
			Expect(span).To(BeNumerically(">=", minSpan), "%d deletes, burst %d, rate %d/s", len(ds), limiterBurst, limiterRate)

			By("restoring quorums first: no grant that restores no quorum while another etcd cluster's quorum-restoring member waits")
			// Judged by the limiter's own grant lines, logged when it
			// decides, against the quorums and asks the apiservers showed:
			// Pod deletes would mix in the controllers' grant → delete
			// latency (12-19 s for a busy cluster with one worker per
			// cluster in CI). A FIFO, or a limiter that ignores quorum,
			// fails it: w4 reboots while the others' third members queue,
			// so its quorum-restoring members ask after them.
			asks := map[string]map[string]time.Time{}
			for _, w := range workloads {
				asks[w] = members[w].asks()
			}
			grants := loggedGrants()
			Expect(grants).NotTo(BeEmpty(), "no grant line in the suite log")
			v, restoring := servedBeforeQuorums(rebootAt, grants, logs, asks)
			AddReportEntry("quorum-restoring grants, each waited from when the limiter could know", strings.Join(restoring, ", "))
			Expect(v).To(BeEmpty(), "grants that restore no quorum made while a quorum-restoring member waited")
			Expect(restoring).NotTo(BeEmpty(), "no grant restored a quorum: the order was not exercised")

			By("giving every cluster its first replacement at a fair time")
			// Metric. For each cluster, its wait is from its first ask of
			// the limiter (the first EtcdMember status saying it waits for
			// the limiter or is being replaced) to its first Pod delete,
			// both as its apiserver reported them; waiting from the reboot
			// itself would count the sandbox's uneven reboot and the
			// members' own checks, not the limiter. Then
			//   fairness = max wait / (min wait + (N-1)/rate) ≤ 2,  N = 4:
			// the burst serves some cluster at once (min wait ~0), and
			// round-robin serving owes a cluster that asks while every
			// other one waits at most one token per other cluster, (N-1)/rate.
			// w4 reboots late and asks while the others' Pods queue and the
			// bucket is empty: served in turn it waits about 1/rate; served
			// in arrival order or by any preference of clusters, it waits
			// for the others' queue (~5 s, ratio ~3).
			// Quorum-lost requests go first by design, so a cluster whose
			// first ask came while it still had quorum is owed its turn only
			// from when it lost quorum (the second of an etcd cluster's three
			// Pods seen terminal by its apiserver): until then the others'
			// quorum-lost requests rightly pass it (CI once saw w4 ask 0.9 s
			// before losing quorum and wait 3.9 s from its ask, ratio 2.19).
			// This bounds each cluster's wait end to end; it does not prove
			// the order. Serving in global arrival order instead (a break
			// tried in session 8) made w4 wait 2.4-2.7 s here, under the 3 s
			// the ratio allows, because little of the others' queue is
			// left by the time w4 asks. Quorum-lost-first order is proven
			// above (servedBeforeQuorums); round-robin by the limiter's
			// own tests (fairness_test.go).
			first, ask, wait := map[string]time.Duration{}, map[string]time.Duration{}, map[string]time.Duration{}
			for _, d := range ds {
				if _, ok := first[d.Cluster]; !ok {
					first[d.Cluster] = d.At.Sub(rebootAt)
				}
			}
			Expect(first).To(HaveLen(len(workloads)))
			lo, hi := time.Duration(1<<62), time.Duration(0)
			for _, w := range workloads {
				at, ok := members[w].firstAsk()
				Expect(ok).To(BeTrue(), "no EtcdMember of %s reported asking the limiter", w)
				if lost := quorumLostAt(logs[w]); lost.After(at) {
					at = lost
				}
				ask[w] = at.Sub(rebootAt)
				wait[w] = max(0, first[w]-ask[w]) // the burst may serve it before it lost quorum
				lo, hi = min(lo, wait[w]), max(hi, wait[w])
			}
			round := time.Duration(len(workloads)-1) * time.Second / limiterRate
			ratio := float64(hi) / float64(lo+round)
			AddReportEntry("time to first replacement", fmt.Sprintf(
				"since the reboot: %s; first ask (or quorum lost, if later): %s; waited: %s; max/(min+(N-1)/rate) = %.2f (max/min since the reboot: %.2f)",
				durations(first), durations(ask), durations(wait), ratio, float64(maxOf(first))/float64(minOf(first))))
			Expect(ratio).To(BeNumerically("<=", 2.0), "waits for the first replacement per cluster: %s", durations(wait))
		})
	})
}

// quorumLostAt is when the first of a workload cluster's etcd clusters
// lost quorum as its apiserver saw it (see quorumLost).
func quorumLostAt(l *e2eutil.PodLog) time.Time {
	var first time.Time
	for _, at := range quorumLost("", l) {
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	return first
}
