package fleet_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/etcdfleet/etcdfleet/fleet/app"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

// shardFenceSpecs run three sharded replicas of their own, through a kill,
// a graceful stop and two rejoins mid-heal, plus the duplicate
// registrations of shard_dup_test.go, and then check from the workload
// apiservers' audit logs that every request a replica sent to a cluster
// arrived while that replica held the cluster's fence Lease.
func shardFenceSpecs() {
	Context("with the clusters sharded over three replicas, as the workload apiservers saw it", Label(shardLabel), Ordered, func() {
		var (
			bin      string
			replicas []*managerProcess
			fences   *fenceLog
			from     time.Time
			// reaches maps each workload apiserver to the registration
			// Secrets whose kubeconfig reaches it: its own, and the
			// duplicates registered meanwhile.
			reaches = map[string][]string{}
		)
		// Every process lives until the container ends, whichever spec
		// started it (a DeferCleanup in a spec would end it with the spec).
		var started []*managerProcess
		start := func(ctx context.Context, id string) *managerProcess {
			m := startManagerProcess(ctx, bin, id, true, "--shard", "--shard-replica-id="+id,
				"--shard-lease-duration="+shardLease.String(), "--shard-sync-interval="+shardSync.String())
			started = append(started, m)
			return m
		}
		BeforeAll(func(ctx SpecContext) {
			if !shardingSelected() {
				Skip("run with -ginkgo.label-filter=" + shardLabel + " (make test-e2e-shard), or a -ginkgo.focus naming \"shard\"")
			}
			stopSuiteManager()
			bin = buildManager(ctx)
			DeferCleanup(func() {
				for _, m := range started {
					m.Kill()
				}
			})
			for _, w := range workloads {
				reaches[w] = []string{w}
			}
			fences = watchFences(ctx)
			// From here on, every etcdfleet-manager request to a workload
			// cluster is checked: the suite's manager is stopped, and the
			// replicas of the specs before are killed.
			from = time.Now()
			for _, id := range []string{"f1", "f2", "f3"} {
				replicas = append(replicas, start(ctx, id))
			}
		}, NodeTimeout(5*time.Minute))

		It("hands the fences over through a kill, a graceful stop and rejoins mid-heal, each cluster engaged once", func(ctx SpecContext) {
			baseline(ctx)
			expectOwnedOnce(ctx, replicas)
			logs, before, rebootAt, load := rebootMidHeal(ctx)
			victim := busiest(replicas)
			By(fmt.Sprintf("SIGKILLing %s mid-heal, which owns %v", victim.Name, victim.Current()))
			orphans := victim.Current()
			victim.Kill()
			survivors := without(replicas, victim)
			expectOwnedOnce(ctx, survivors)
			By("rejoining the killed replica and stopping another gracefully, still mid-heal")
			back := rejoin(ctx, start, victim, orphans)
			leaving := survivors[0]
			had := leaving.Current()
			leaving.Stop()
			replicas = append(survivors[1:], back)
			expectOwnedOnce(ctx, replicas)
			expectHealedWithinBound(ctx, logs, before, rebootAt, load)
			replicas = append(replicas, rejoin(ctx, start, leaving, had))
			expectOwnedOnce(ctx, replicas)
			expectNoOverlap(append(replicas, victim, leaving))
		}, SpecTimeout(8*time.Minute))

		It("refuses a second registration of an engaged cluster that lands on another replica", func(ctx SpecContext) {
			duplicateOnAnotherReplica(ctx, replicas, "w1", reaches)
		}, SpecTimeout(3*time.Minute))

		It("engages one of two registrations of one cluster created at once on two replicas, never both", func(ctx SpecContext) {
			racingDuplicates(ctx, replicas, "w6", reaches)
			expectOwnedOnce(ctx, replicas)
		}, SpecTimeout(4*time.Minute))

		It("sent every request of a replica to a workload cluster while it held that cluster's fence, as the apiservers' audit logs show", func(ctx SpecContext) {
			// The audit log is written as requests complete: a moment for
			// the last ones.
			time.Sleep(time.Second)
			now := time.Now()
			n := expectFencedRequests(fences.tenures(now), reaches, from, now)
			load, _ := os.ReadFile("/proc/loadavg")
			AddReportEntry("fenced requests", n+"; load average "+strings.Join(strings.Fields(string(load))[:3], " "))
		}, SpecTimeout(2*time.Minute))
	})
}

// --- the fence Leases' history -------------------------------------------

// fenceVersion is one version of a fence Lease as the watch delivered it.
type fenceVersion struct {
	holder            string
	acquired, renewed time.Time
	dur               time.Duration
	seen              time.Time // when the watch delivered it
}

// fenceLog records every version of every fence Lease (mcr-shard-<cluster>)
// from a watch on the management cluster.
type fenceLog struct {
	mu sync.Mutex
	by map[string][]fenceVersion // cluster → versions, in watch order
}

// watchFences lists the fence Leases and watches them until ctx's spec
// tree ends (the watch is re-opened from the last version if it closes).
func watchFences(ctx context.Context) *fenceLog {
	GinkgoHelper()
	f := &fenceLog{by: map[string][]fenceVersion{}}
	leases := sb.Cluster("mgmt").Clientset.CoordinationV1().Leases(secretNS)
	list, err := leases.List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	for i := range list.Items {
		f.add(&list.Items[i], false)
	}
	wctx, cancel := context.WithCancel(context.Background())
	DeferCleanup(cancel)
	go func() {
		rv := list.ResourceVersion
		for wctx.Err() == nil {
			w, err := leases.Watch(wctx, metav1.ListOptions{ResourceVersion: rv})
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			time.Sleep(10 * time.Millisecond) // never a busy loop on a failing watch
			for ev := range w.ResultChan() {
				l, ok := ev.Object.(*coordinationv1.Lease)
				if !ok {
					continue // a watch error: re-open from rv
				}
				rv = l.ResourceVersion
				f.add(l, ev.Type == watch.Deleted)
			}
		}
	}()
	return f
}

func (f *fenceLog) add(l *coordinationv1.Lease, deleted bool) {
	cluster, ok := strings.CutPrefix(l.Name, "mcr-shard-")
	if !ok {
		return
	}
	v := fenceVersion{holder: ptr.Deref(l.Spec.HolderIdentity, ""), seen: time.Now()}
	if deleted {
		v.holder = ""
	}
	if t := l.Spec.AcquireTime; t != nil {
		v.acquired = t.Time
	}
	if t := l.Spec.RenewTime; t != nil {
		v.renewed = t.Time
	}
	if d := l.Spec.LeaseDurationSeconds; d != nil {
		v.dur = time.Duration(*d) * time.Second
	}
	f.mu.Lock()
	f.by[cluster] = append(f.by[cluster], v)
	f.mu.Unlock()
}

// tenure is a span in which replica held cluster's fence.
type tenure struct {
	replica, cluster string
	from, to         time.Time
}

// tenures turns the fence history into who held what when, by the fence's
// own terms: a holder holds from its acquireTime until the first of its
// last renewal plus the lease duration, the next holder's acquireTime, and
// its release as the watch saw it (later than the release itself by the
// watch's delivery, the one leniency here). A holder that renews a fence
// already expired starts a new tenure at that renewal. now ends the
// tenures still held.
func (f *fenceLog) tenures(now time.Time) []tenure {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []tenure
	for cluster, vs := range f.by {
		var (
			cur *tenure
			exp time.Time
		)
		closeAt := func(t time.Time) {
			cur.to = minTime(t, exp)
			out = append(out, *cur)
			cur = nil
		}
		for _, v := range vs {
			switch {
			case cur != nil && v.holder == "":
				closeAt(v.seen)
			case cur != nil && v.holder != cur.replica:
				closeAt(v.acquired)
			case cur != nil && v.renewed.After(exp):
				closeAt(exp)
				cur = &tenure{replica: v.holder, cluster: cluster, from: v.renewed}
			}
			if v.holder == "" {
				continue
			}
			if cur == nil {
				from := v.acquired
				if from.IsZero() || v.renewed.After(from.Add(v.dur)) {
					from = v.renewed // adopted after a lapse
				}
				cur = &tenure{replica: v.holder, cluster: cluster, from: from}
			}
			exp = v.renewed.Add(v.dur)
		}
		if cur != nil {
			closeAt(now)
		}
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// --- the audit logs ------------------------------------------------------

// auditRecord is what the fence check reads of an audit log line; the
// sandbox logs each request at ResponseComplete, and a watch also at
// ResponseStarted.
type auditRecord struct {
	AuditID        string    `json:"auditID"`
	Stage          string    `json:"stage"`
	Verb           string    `json:"verb"`
	RequestURI     string    `json:"requestURI"`
	UserAgent      string    `json:"userAgent"`
	Received       time.Time `json:"requestReceivedTimestamp"`
	StageTimestamp time.Time `json:"stageTimestamp"`
}

// expectFencedRequests reads every workload apiserver's audit log since
// from and checks, for every request an etcdfleet-manager sent (by its
// user agent), that its user agent names the replica, and that the
// apiserver received it within a tenure of that replica on the fence of a
// Secret that reaches this apiserver. A watch must also have ended by the
// end of that tenure as the apiserver saw it, or at least ended: a watch
// still open on a cluster whose fence the replica no longer holds is a
// client held to it. It returns how many requests it checked.
func expectFencedRequests(ts []tenure, reaches map[string][]string, from, now time.Time) string {
	GinkgoHelper()
	held := map[string][]tenure{} // replica/cluster → tenures
	for _, t := range ts {
		held[t.replica+"/"+t.cluster] = append(held[t.replica+"/"+t.cluster], t)
	}
	within := func(replica string, secrets []string, at time.Time) (tenure, bool) {
		for _, s := range secrets {
			for _, t := range held[replica+"/"+s] {
				if !at.Before(t.from) && !at.After(t.to) {
					return t, true
				}
			}
		}
		return tenure{}, false
	}
	var (
		problems  []string
		checked   int
		byPurpose = map[string]int{}
		lateWatch time.Duration
	)
	for _, w := range sortedKeys(reaches) {
		recs := readAuditRecords(w, from)
		for _, r := range recs {
			if r.Received.After(now) {
				// After the fence history was read: a tenure still held
				// ends at now in it, so later requests cannot be judged
				// (a rights re-check of every cluster once fell there).
				continue
			}
			purpose, replica, ok := app.ParseUserAgent(r.UserAgent)
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: %s %s at %s: user agent %q names no replica",
					w, r.Verb, r.RequestURI, r.Received.Format(time.StampMicro), r.UserAgent))
				continue
			}
			checked++
			byPurpose[purpose]++
			t, ok := within(replica, reaches[w], r.Received)
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s: %s %s (%s) by %s at %s, outside its fences on %v: %s",
					w, r.Verb, r.RequestURI, purpose, replica, r.Received.Format(time.StampMicro), reaches[w], tenuresOf(held, replica, reaches[w])))
			case r.Verb == "watch" && r.StageTimestamp.IsZero() && t.to.Before(now):
				problems = append(problems, fmt.Sprintf("%s: watch %s by %s opened at %s, in its tenure %s–%s, is still open",
					w, r.RequestURI, replica, r.Received.Format(time.StampMicro), t.from.Format(time.StampMicro), t.to.Format(time.StampMicro)))
			case r.Verb == "watch":
				lateWatch = max(lateWatch, r.StageTimestamp.Sub(t.to))
			}
		}
	}
	Expect(problems).To(BeEmpty(), "requests sent outside the sender's fence")
	Expect(checked).To(BeNumerically(">", 0), "no manager request was audited")
	return fmt.Sprintf("%d requests of %d tenures, all within their sender's fence (by purpose %v); watches closed at most %s after their tenure ended, as the apiservers logged it",
		checked, len(tenuresAll(held)), byPurpose, max(lateWatch, 0).Round(time.Millisecond))
}

// readAuditRecords returns the etcdfleet-manager requests of cluster w's
// audit log received since from, one per audit ID: its ResponseComplete
// record, or for a watch still open its ResponseStarted one (with no
// StageTimestamp).
func readAuditRecords(w string, from time.Time) []auditRecord {
	GinkgoHelper()
	c := sb.Cluster(w)
	f, err := os.Open(sandbox.AuditLog(c.Dir, c.Name))
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	byID := map[string]auditRecord{}
	var order []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var r auditRecord
		Expect(json.Unmarshal(sc.Bytes(), &r)).To(Succeed())
		if r.Received.Before(from) || !strings.HasPrefix(r.UserAgent, "etcdfleet-manager/") {
			continue
		}
		if r.Stage != "ResponseComplete" {
			r.StageTimestamp = time.Time{}
		}
		prev, seen := byID[r.AuditID]
		if !seen {
			order = append(order, r.AuditID)
		}
		if !seen || prev.StageTimestamp.IsZero() {
			byID[r.AuditID] = r
		}
	}
	Expect(sc.Err()).NotTo(HaveOccurred())
	out := make([]auditRecord, 0, len(order))
	for _, id := range order {
		out = append(out, byID[id])
	}
	return out
}

func tenuresOf(held map[string][]tenure, replica string, secrets []string) string {
	var parts []string
	for _, s := range secrets {
		for _, t := range held[replica+"/"+s] {
			parts = append(parts, fmt.Sprintf("%s %s–%s", s, t.from.Format(time.StampMicro), t.to.Format(time.StampMicro)))
		}
	}
	if len(parts) == 0 {
		return "it never held them"
	}
	return strings.Join(parts, ", ")
}

func tenuresAll(held map[string][]tenure) []tenure {
	var out []tenure
	for _, k := range sortedKeys(held) {
		out = append(out, held[k]...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].from.Before(out[j].from) })
	return out
}
