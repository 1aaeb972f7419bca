package fleet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/gate"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
)

// The fleet's rollout wave: managerConfig sets rollout.maxConcurrentClusters
// to waveMax. Each workload cluster gets a one-member PVC EtcdCluster in
// waveNS (apart from etcdNS, whose Pods the heal helpers count), upgraded
// from waveFrom to e2eutil.EtcdVersion at once in every cluster.
const (
	waveNS, waveName = "wave", "etcd-wave"
	waveFrom         = "3.6.16"
	waveMax          = 2
)

func waveSpecs() {
	It("rolls an upgrade of every cluster at most rollout.maxConcurrentClusters at a time; a fleet reboot mid-wave heals first, within the limiter's bound, and the wave then completes", func(ctx SpecContext) {
		baseline(ctx)
		for _, w := range workloads {
			Expect(client.IgnoreAlreadyExists(wc[w].Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: waveNS}}))).To(Succeed())
			ec := e2eutil.NewEtcdCluster(waveNS, waveName, 1, false)
			ec.Spec.Version = waveFrom
			Expect(wc[w].Create(ctx, ec)).To(Succeed())
		}
		DeferCleanup(func(ctx context.Context) {
			for _, w := range workloads {
				Expect(client.IgnoreNotFound(wc[w].Delete(ctx, &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: waveNS, Name: waveName}}))).To(Succeed())
			}
		})
		for _, w := range workloads {
			e2eutil.WaitAvailable(ctx, wc[w], waveNS, waveName, 2*time.Minute)
		}
		rolls := watchRolls(ctx)
		maxRolling := watchFleetRolling(ctx)
		before := podUIDs(ctx, workloads...)
		logs := watchPods(ctx, workloads...)
		members := watchMembers(ctx, workloads...)

		By("asking every cluster for etcd " + e2eutil.EtcdVersion + " at once")
		for _, w := range workloads {
			e2eutil.EditEtcdCluster(ctx, wc[w], waveNS, waveName, &v1alpha1.EtcdCluster{}, func(ec *v1alpha1.EtcdCluster) { ec.Spec.Version = e2eutil.EtcdVersion })
		}

		By("rebooting every node of every cluster once the first member is rolled")
		Eventually(rolls.started).WithContext(ctx).WithTimeout(time.Minute).WithPolling(10 * time.Millisecond).Should(BeNumerically(">=", 1))
		rebootAt := reboot(ctx, workloads...)
		healed := waitHealed(ctx, rebootAt, before, 2*time.Minute, workloads...)
		// The limiter's bound on the heal, as the hung-cluster spec's: the
		// rebooted etcdNS members and the wave's one member per cluster, but
		// the burst, paced at rate, one token more for a roll step granted
		// before the reboot, the last etcd start and 10 s for the reboot.
		all := len(workloads)
		for _, w := range workloads {
			all += len(before[w])
		}
		bound := time.Duration(float64(all-limiterBurst+1)/limiterRate*float64(time.Second)) + etcdStart(logs, before, workloads...) + 10*time.Second
		AddReportEntry("fleet reboot mid-wave: heal time", fmt.Sprintf("%s (per cluster: %s); bound %s",
			maxOf(healed).Round(100*time.Millisecond), durations(healed), bound.Round(100*time.Millisecond)))
		// The order, not the time, is what the limiter owes (a timed bound
		// failed on a loaded machine whose members asked late): no roll
		// step may take a token while a heal that had asked still waits.
		// Grants, not deletes: a granted member of a busy cluster (one
		// worker per cluster here) claimed its token and deleted its Pod
		// up to 19 s later in CI, after the roll's grant.
		asks := map[string]map[string]time.Time{}
		for _, w := range workloads {
			asks[w] = members[w].asks()
		}

		By("the wave completes: every cluster's member runs " + e2eutil.EtcdVersion + ", never more than the setting rolling at once")
		Eventually(rolls.done).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(100 * time.Millisecond).Should(Equal(len(workloads)))
		for _, w := range workloads {
			e2eutil.WaitAvailable(ctx, wc[w], waveNS, waveName, time.Minute)
		}
		// Judged once every roll step was granted.
		grants := loggedGrants()
		Expect(grants).To(ContainElement(Satisfy(func(g loggedGrant) bool {
			return g.action == string(gate.VersionRoll) && g.at.After(rebootAt)
		})), "the limiter's grant lines were read")
		Expect(rollsBeforeHeals(rebootAt, grants, asks)).To(BeEmpty(), "the heals come before the wave's rolls")
		peak, intervals := rolls.peak()
		AddReportEntry("rollout wave", fmt.Sprintf("peak %d clusters rolling at once (setting %d): %s", peak, waveMax, intervals))
		Expect(peak).To(BeNumerically("<=", waveMax), "clusters rolling at once, as the apiservers saw the members: %s", intervals)
		Expect(peak).To(BeNumerically(">=", 1))
		Expect(maxRolling()).To(BeNumerically("<=", waveMax), "the Fleet's clustersRolling")
		Expect(maxRolling()).To(BeNumerically(">=", 1), "the Fleet showed the wave")
		Eventually(func(g Gomega) {
			f := &fleetv1.Fleet{}
			g.Expect(mgmtC.Get(ctx, types.NamespacedName{Name: fleetv1.FleetName}, f)).To(Succeed())
			g.Expect(f.Status.ClustersRolling).To(BeZero())
			g.Expect(f.Status.ClustersWaitingToRoll).To(BeZero())
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		for _, w := range workloads {
			ec := &v1alpha1.EtcdCluster{}
			Expect(wc[w].Get(ctx, types.NamespacedName{Namespace: waveNS, Name: waveName}, ec)).To(Succeed())
			Expect(meta.FindStatusCondition(ec.Status.Conditions, v1alpha1.ConditionInRollout)).To(BeNil(), "%s gave its place back", w)
		}
	}, SpecTimeout(8*time.Minute))
}

// rollLog records, per workload cluster, when the apiserver first showed
// the wave's member asked for the new version (its roll began) and when
// the member first reported running it (its roll ended).
type rollLog struct {
	mu         sync.Mutex
	begin, end map[string]time.Time
}

func watchRolls(ctx context.Context) *rollLog {
	GinkgoHelper()
	l := &rollLog{begin: map[string]time.Time{}, end: map[string]time.Time{}}
	for _, w := range workloads {
		wi, err := wc[w].Watch(ctx, &v1alpha1.EtcdMemberList{}, client.InNamespace(waveNS))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(wi.Stop)
		go func() {
			for ev := range wi.ResultChan() {
				m, ok := ev.Object.(*v1alpha1.EtcdMember)
				if !ok || ev.Type == watch.Deleted {
					continue
				}
				now := time.Now()
				l.mu.Lock()
				if _, seen := l.begin[w]; !seen && m.Spec.Version == e2eutil.EtcdVersion {
					l.begin[w] = now
				}
				if _, seen := l.end[w]; !seen && m.Status.Version == e2eutil.EtcdVersion {
					l.end[w] = now
				}
				l.mu.Unlock()
			}
		}()
	}
	return l
}

func (l *rollLog) started() int { l.mu.Lock(); defer l.mu.Unlock(); return len(l.begin) }
func (l *rollLog) done() int    { l.mu.Lock(); defer l.mu.Unlock(); return len(l.end) }

// peak is the most clusters whose roll had begun and not ended at one
// instant, and the intervals it was computed from.
func (l *rollLog) peak() (int, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	type edge struct {
		at time.Time
		d  int
	}
	var edges []edge
	var desc string
	var first time.Time
	for _, w := range sortedKeys(l.begin) {
		if first.IsZero() || l.begin[w].Before(first) {
			first = l.begin[w]
		}
	}
	for _, w := range sortedKeys(l.begin) {
		end, ok := l.end[w]
		if !ok {
			end = time.Now()
		}
		edges = append(edges, edge{l.begin[w], 1}, edge{end, -1})
		desc += fmt.Sprintf("%s [%s, %s] ", w, l.begin[w].Sub(first).Round(10*time.Millisecond), end.Sub(first).Round(10*time.Millisecond))
	}
	// Ends sort before begins at the same instant: a place handed over is
	// not two clusters rolling.
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.d - b.d
	})
	peak, n := 0, 0
	for _, e := range edges {
		n += e.d
		peak = max(peak, n)
	}
	return peak, desc
}

// watchFleetRolling polls the Fleet's clustersRolling until the spec ends
// and returns the highest value seen so far.
func watchFleetRolling(ctx context.Context) func() int32 {
	var mu sync.Mutex
	var most int32
	ctx, cancel := context.WithCancel(ctx)
	DeferCleanup(cancel)
	go func() {
		for ctx.Err() == nil {
			f := &fleetv1.Fleet{}
			if mgmtC.Get(ctx, types.NamespacedName{Name: fleetv1.FleetName}, f) == nil {
				mu.Lock()
				most = max(most, f.Status.ClustersRolling)
				mu.Unlock()
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return func() int32 { mu.Lock(); defer mu.Unlock(); return most }
}

// loggedGrant is one "Destructive action granted" line of the in-process
// manager's limiter (app's logGrant), from suiteLog.
type loggedGrant struct {
	at                                              time.Time
	cluster, namespace, etcdCluster, member, action string
	// waited is the limiter's own count from the request's first ask.
	waited time.Duration
}

// loggedGrants parses the limiter's grant lines from suiteLog.
func loggedGrants() []loggedGrant {
	var out []loggedGrant
	for _, line := range strings.Split(suiteLog.String(), "\n") {
		if !strings.Contains(line, "Destructive action granted") {
			continue
		}
		f := strings.Split(line, "\t")
		at, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(f[0]))
		var kv struct {
			Cluster, Namespace, EtcdCluster, Member, Action string
			WaitedSeconds                                   float64
		}
		if err != nil || json.Unmarshal([]byte(f[len(f)-1]), &kv) != nil {
			continue
		}
		out = append(out, loggedGrant{at, kv.Cluster, kv.Namespace, kv.EtcdCluster, kv.Member, kv.Action,
			time.Duration(kv.WaitedSeconds * float64(time.Second))})
	}
	return out
}

// rollsBeforeHeals returns every version-roll grant after rebootAt that
// the limiter made while a heal of etcdNS had asked (as its apiserver saw
// the member's status) and was granted only later, each give or take
// quorumOrderSlack.
func rollsBeforeHeals(rebootAt time.Time, grants []loggedGrant, asks map[string]map[string]time.Time) []string {
	var out []string
	for _, r := range grants {
		if r.action != string(gate.VersionRoll) || r.at.Before(rebootAt) {
			continue
		}
		for _, h := range grants {
			a, asked := asks[h.cluster][h.member]
			// The member's first ask as its apiserver saw it, unless this
			// grant answered a later ask: a grant whose status write then
			// conflicted is given back, and the member asks again, which
			// the Events (aggregated) do not show but the grant's own
			// wait does.
			if again := h.at.Add(-h.waited); again.After(a) {
				a = again
			}
			if h.namespace == etcdNS && asked && a.Add(quorumOrderSlack).Before(r.at) && h.at.After(r.at.Add(quorumOrderSlack)) {
				out = append(out, fmt.Sprintf("%s %s granted a roll at %s while %s %s, asked at %s, waited until %s",
					r.cluster, r.member, r.at.Format("15:04:05.000"), h.cluster, h.member, a.Format("15:04:05.000"), h.at.Format("15:04:05.000")))
			}
		}
	}
	return out
}
