package fleet

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/etcdfleet/etcdfleet/fleet/limiter"
	"github.com/etcdfleet/etcdfleet/test/bench"
	"github.com/etcdfleet/etcdfleet/test/managerproc"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
	"github.com/etcdfleet/etcdfleet/test/timeline"
)

// healRun is what one heal left to report.
type healRun struct {
	ws           []*workload
	t0           time.Time // the reboot call
	rebootCall   time.Duration
	replicas     int
	limiter      limiter.Config      // fleet-wide
	tokens       float64             // in the buckets at the reboot, all replicas
	grants       []managerproc.Grant // during the heal, all replicas
	queues       controllerTimes     // during the heal, all replicas
	loadAtReboot string
	managerRSS   float64
}

// step is one part of a replacement's time, over every replacement.
type step struct {
	key, name string // key names its ReportMetric
	ds        []time.Duration
}

func (s step) String() string {
	return fmt.Sprintf("%-36s p50 %6.2f s   p99 %6.2f s   max %6.2f s", s.name,
		bench.Percentile(s.ds, 0.5).Seconds(), bench.Percentile(s.ds, 0.99).Seconds(), bench.Percentile(s.ds, 1).Seconds())
}

func (r healRun) report(b *testing.B) {
	var lastStarts, starts, healedAt []time.Duration
	var firstTerminal, lastTerminal time.Time
	var reps []bench.Replacement
	var clusterOf []string
	var quorums []clusterQuorum
	// The status's own lag: Available is what a user reads, and it is
	// written by the cluster reconciler once etcd answers it.
	toAvailable := step{key: "ready-available", name: "last Pod Ready → Available (per cluster)"}
	// Its two writers, from the same watch: the member reconciler, then
	// the cluster reconciler.
	toMember := step{key: "pod-member-ready", name: "Pod Ready → EtcdMember Ready"}
	toCluster := step{key: "member-cluster", name: "last EtcdMember Ready → Available"}
	for _, w := range r.ws {
		rs, err := w.rec.Replacements(w.old)
		if err != nil {
			b.Fatalf("%s: %v", w.name, err)
		}
		last := slices.MaxFunc(rs, func(x, y bench.Replacement) int { return x.Created.Compare(y.Created) })
		lastStarts = append(lastStarts, last.Start())
		lastReady := slices.MaxFunc(rs, func(x, y bench.Replacement) int { return x.Ready.Compare(y.Ready) }).Ready
		toAvailable.ds = append(toAvailable.ds, w.healed.Sub(lastReady))
		m, c, err := statusLag(w, rs)
		if err != nil {
			b.Fatalf("%s: %v", w.name, err)
		}
		toMember.ds, toCluster.ds = append(toMember.ds, m...), append(toCluster.ds, c)
		for _, rep := range rs {
			starts = append(starts, rep.Start())
			if firstTerminal.IsZero() || rep.Terminal.Before(firstTerminal) {
				firstTerminal = rep.Terminal
			}
			if rep.Terminal.After(lastTerminal) {
				lastTerminal = rep.Terminal
			}
			reps, clusterOf = append(reps, rep), append(clusterOf, w.name)
		}
		healedAt = append(healedAt, w.healed.Sub(firstTerminal))
		quorums = append(quorums, clusterQuorum{bench.QuorumOf(members, rs), slices.MinFunc(rs, byTerminal).Terminal})
	}
	for i, w := range r.ws { // firstTerminal is final only now
		healedAt[i] = w.healed.Sub(firstTerminal)
	}
	heal := bench.Percentile(healedAt, 1)
	etcdStart := bench.Percentile(lastStarts, 0.5)
	bound := timeline.LimiterBound(len(reps), r.limiter.Burst, r.limiter.Rate, etcdStart)
	ratio := heal.Seconds() / bound.Seconds()
	q := summarize(quorums, firstTerminal, r.limiter, etcdStart)
	steps, unmatched := r.breakdown(reps, clusterOf)
	worst, worstAt := worstWindow(r.ws)
	throttled := 0
	for _, g := range r.grants {
		if g.Waited > 0 {
			throttled++
		}
	}

	b.ReportMetric(0, "ns/op")
	b.ReportMetric(heal.Seconds(), "heal-s")
	b.ReportMetric(bound.Seconds(), "bound-s")
	b.ReportMetric(ratio, "heal/bound")
	b.ReportMetric(bench.Ms(etcdStart), "etcd-start-ms")
	b.ReportMetric(float64(len(r.ws)), "clusters")
	b.ReportMetric(float64(r.replicas), "replicas")
	b.ReportMetric(float64(worst), "worst-1s-deletes")
	b.ReportMetric(q.everywhere.Seconds(), "quorum-everywhere-s")
	b.ReportMetric(q.bound.Seconds(), "quorum-bound-s")
	b.ReportMetric(q.ratio(), "quorum/bound")
	b.ReportMetric(bench.Percentile(q.perCluster, 0.5).Seconds(), "to-quorum-p50-s")
	for _, s := range steps {
		b.ReportMetric(bench.Percentile(s.ds, 0.99).Seconds(), s.key+"-p99-s")
	}
	lags := []step{toAvailable, toMember, toCluster}
	for _, s := range lags {
		b.ReportMetric(bench.Percentile(s.ds, 0.99).Seconds(), s.key+"-p99-s")
	}
	var lines []string
	for _, s := range append(steps, lags...) {
		lines = append(lines, s.String())
	}
	bench.Logf(b, `fleet heal (%d clusters × 1 EtcdCluster × %d members = %d replacements, %d manager(s), limiter %g/s burst %d fleet-wide, %.1f tokens in the buckets at the reboot, node outage %s):
  heal time (first Pod terminal → every EtcdCluster Available, every Pod replaced and Ready): %.2f s   (from the reboot call: %.2f s)
    first cluster healed after %.2f s, median %.2f s; Pods seen terminal from %.2f s to %.2f s after the reboot call (graceful stop), which took %.2f s
  etcd start (per cluster, last replacement's ADDED → Ready; p50): %.0f ms   (all replacements: p50 %.0f ms)
  limiter lower bound max(0, %d − %d)/%g/s + etcd start = %.2f s
  heal / bound = %.2f   (goal ≤ %.1f: %s; from the reboot call it would be %.2f)
  %s
  per replacement (%d; %d without a logged grant):
    %s
  worst 1 s window of deletes, all replicas, from the apiservers' watch: %d from +%.2f s (bound rate + burst = %g)
  grants %d, of which waited %d; manager RSS %.0f MiB in all
  where the controllers' time went during the heal, all replicas (bucket upper bounds):
    %s
  host: at the reboot %s; at the end %s`,
		len(r.ws), members, len(reps), r.replicas, r.limiter.Rate, r.limiter.Burst, r.tokens, outage,
		heal.Seconds(), (heal + firstTerminal.Sub(r.t0)).Seconds(), bench.Percentile(healedAt, 0).Seconds(), bench.Percentile(healedAt, 0.5).Seconds(),
		firstTerminal.Sub(r.t0).Seconds(), lastTerminal.Sub(r.t0).Seconds(), r.rebootCall.Seconds(),
		bench.Ms(etcdStart), bench.Ms(bench.Percentile(starts, 0.5)),
		len(reps), r.limiter.Burst, r.limiter.Rate, bound.Seconds(), ratio, goal, bench.Verdict(ratio <= goal),
		(heal+firstTerminal.Sub(r.t0)).Seconds()/bound.Seconds(), q,
		len(reps), unmatched, strings.Join(lines, "\n    "),
		worst, worstAt.Sub(r.t0).Seconds(), r.limiter.Rate+float64(r.limiter.Burst),
		len(r.grants), throttled, r.managerRSS/mib, strings.Join(r.queues.lines(), "\n    "), r.loadAtReboot, bench.HostLoad())
	r.picture(b, firstTerminal, heal, bound)
}

// picture writes the heal as make demo draws it (test/timeline), one row
// per cluster, to $BENCH_TIMELINE (make bench: heal-timeline-bench.svg in
// the repository root) or a file in the temporary directory; a sharded
// run's picture goes beside it, named for its replicas
// (heal-timeline-bench-3-replicas.svg), so one run keeps both.
func (r healRun) picture(b *testing.B, origin time.Time, heal, bound time.Duration) {
	var rows []timeline.Row
	for _, w := range r.ws {
		rows = append(rows, timeline.Row{Name: w.name + "/" + name, Members: bench.TimelineMembers(w.rec.Events(), w.old, r.grantOf(w.name)), Healed: w.healed})
	}
	t := timeline.Timeline{
		Title: fmt.Sprintf("make bench: %d EtcdClusters × %d members healed in %.1f s, %.2f × the bound (%d manager(s), limiter %g/s, burst %d)",
			len(r.ws), members, heal.Seconds(), heal.Seconds()/bound.Seconds(), r.replicas, r.limiter.Rate, r.limiter.Burst),
		Origin:    origin,
		AxisLabel: fmt.Sprintf("seconds since the first member Pod was seen terminal (the reboot call: %.1f s)", r.t0.Sub(origin).Seconds()),
		Rows:      rows,
		Bound:     bound,
	}
	svg, err := timeline.SVG(t)
	if err != nil {
		b.Fatal(err)
	}
	path := os.Getenv("BENCH_TIMELINE")
	if path == "" {
		path = filepath.Join(os.TempDir(), "etcdfleet-heal-timeline-bench.svg")
	}
	if r.replicas > 1 {
		path = strings.TrimSuffix(path, ".svg") + fmt.Sprintf("-%d-replicas.svg", r.replicas)
	}
	if err := os.WriteFile(path, svg, 0o644); err != nil {
		b.Fatal(err)
	}
	bench.Logf(b, "heal picture: %s", path)
}

// grantOf finds the grant that let a member of cluster go: the last one
// logged for it at or before its old Pod's delete, as breakdown does.
func (r healRun) grantOf(cluster string) bench.GrantOf {
	return func(member string, deleted time.Time) (time.Time, time.Duration, bool) {
		var found *managerproc.Grant
		for i := range r.grants {
			g := &r.grants[i]
			if g.Cluster == cluster && g.Namespace == ns && g.Member == member && !g.At.After(deleted) {
				found = g
			}
		}
		if found == nil {
			return time.Time{}, 0, false
		}
		return found.At, found.Waited, true
	}
}

// breakdown splits each replacement at its grant: the last grant logged
// for its member before its old Pod's DELETED event. A replacement whose
// grant was not logged (a manager killed before its log was read) counts
// in the watch-only steps and in unmatched.
func (r healRun) breakdown(reps []bench.Replacement, clusterOf []string) ([]step, int) {
	byMember := map[string][]managerproc.Grant{}
	for _, g := range r.grants {
		k := g.Cluster + "/" + g.Namespace + "/" + g.Member
		byMember[k] = append(byMember[k], g)
	}
	toAsk := step{key: "ask", name: "terminal → limiter first ask"}
	wait := step{key: "limiter-wait", name: "limiter wait (first ask → grant)"}
	toDelete := step{key: "grant-delete", name: "grant → old Pod DELETED"}
	toCreate := step{key: "delete-create", name: "DELETED → new Pod ADDED"}
	toReady := step{key: "create-ready", name: "ADDED → Ready"}
	total := step{key: "total", name: "terminal → Ready (all of it)"}
	unmatched := 0
	for i, rep := range reps {
		var grant *managerproc.Grant
		for _, g := range byMember[clusterOf[i]+"/"+ns+"/"+rep.Name] {
			if !g.At.After(rep.Deleted) {
				grant = &g
			}
		}
		if grant == nil {
			unmatched++
		} else {
			asked := grant.At.Add(-grant.Waited)
			toAsk.ds = append(toAsk.ds, asked.Sub(rep.Terminal))
			wait.ds = append(wait.ds, grant.Waited)
			toDelete.ds = append(toDelete.ds, rep.Deleted.Sub(grant.At))
		}
		toCreate.ds = append(toCreate.ds, rep.Created.Sub(rep.Deleted))
		toReady.ds = append(toReady.ds, rep.Start())
		total.ds = append(total.ds, rep.Ready.Sub(rep.Terminal))
	}
	return []step{toAsk, wait, toDelete, toCreate, toReady, total}, unmatched
}

// statusLag splits one cluster's status lag, from the apiserver's watch:
// each replacement's Pod Ready → its EtcdMember Ready for that Pod, and
// the last of those → the EtcdCluster Available with every member ready.
func statusLag(w *workload, rs []bench.Replacement) (member []time.Duration, cluster time.Duration, err error) {
	if err := w.status.Err(); err != nil {
		return nil, 0, fmt.Errorf("status watch: %w", err)
	}
	var last time.Time
	for _, rep := range rs {
		at, ok := w.status.MemberReady(rep.Name, rep.NewUID)
		if !ok {
			return nil, 0, fmt.Errorf("EtcdMember %s never read Ready for Pod %s", rep.Name, rep.NewUID)
		}
		member = append(member, at.Sub(rep.Ready))
		if at.After(last) {
			last = at
		}
	}
	avail, ok := w.status.Available(name)
	if !ok || avail.Before(last) {
		return nil, 0, fmt.Errorf("EtcdCluster %s not seen Available after its last member's Ready (%v)", name, avail)
	}
	return member, avail.Sub(last), nil
}

// clusterQuorum is one cluster's quorum and its first terminal Pod.
type clusterQuorum struct {
	bench.Quorum
	firstTerminal time.Time
}

func byTerminal(x, y bench.Replacement) int { return x.Terminal.Compare(y.Terminal) }

// quorumFigures is availability as a user feels it: how long each cluster
// could not take writes, and how close the fleet came to the lowest time
// to quorum everywhere that any order of grants allows.
type quorumFigures struct {
	perCluster []time.Duration // its first terminal Pod → quorum again
	everywhere time.Duration   // the fleet's first terminal Pod → the last cluster's quorum again
	needed     int             // replacements Ready before every cluster has quorum
	bound      time.Duration   // needed paced by the limiter, plus etcd start
	l          limiter.Config
}

func summarize(qs []clusterQuorum, firstTerminal time.Time, l limiter.Config, etcdStart time.Duration) quorumFigures {
	f := quorumFigures{l: l}
	var last time.Time
	for _, q := range qs {
		if q.Lost.IsZero() {
			f.perCluster = append(f.perCluster, 0)
			continue
		}
		f.perCluster = append(f.perCluster, q.Regained.Sub(q.firstTerminal))
		f.needed += q.Needed
		if q.Regained.After(last) {
			last = q.Regained
		}
	}
	if !last.IsZero() {
		f.everywhere = last.Sub(firstTerminal)
	}
	f.bound = timeline.LimiterBound(f.needed, l.Burst, l.Rate, etcdStart)
	return f
}

func (f quorumFigures) ratio() float64 { return f.everywhere.Seconds() / f.bound.Seconds() }

func (f quorumFigures) String() string {
	return fmt.Sprintf(`time to quorum (first terminal Pod → a majority Ready again), per cluster: p50 %.2f s, max %.2f s
  time to quorum everywhere: %.2f s; quorum bound max(0, %d − %d)/%g/s + etcd start = %.2f s; quorum / bound = %.2f`,
		bench.Percentile(f.perCluster, 0.5).Seconds(), bench.Percentile(f.perCluster, 1).Seconds(),
		f.everywhere.Seconds(), f.needed, f.l.Burst, f.l.Rate, f.bound.Seconds(), f.ratio())
}

// worstWindow is the most old-Pod deletes any 1 s window saw, across all
// clusters (and so all replicas), from the apiservers' watches, and when
// that window started.
func worstWindow(ws []*workload) (int, time.Time) {
	var at []time.Time
	for _, w := range ws {
		for _, e := range w.rec.Events() {
			if e.Type == "DELETED" && w.old[e.Name] == e.UID {
				at = append(at, e.At)
			}
		}
	}
	sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
	worst, from := 0, time.Time{}
	j := 0
	for i := range at {
		for j < len(at) && at[j].Sub(at[i]) < time.Second {
			j++
		}
		if j-i > worst {
			worst, from = j-i, at[i]
		}
	}
	return worst, from
}

const mib = 1 << 20

// reportClusterCost prints what a workload cluster costs at rest (healthy,
// its EtcdCluster Available): the RSS of its processes by part, averaged
// over the clusters. The simulated kubelets run inside the bench process
// and are not counted.
func reportClusterCost(b *testing.B, f *sandbox.Fleet, names []string) {
	parts := map[string]float64{}
	var total float64
	for _, n := range names {
		for part, pids := range f.Cluster(n).Processes() {
			for _, pid := range pids {
				rss := bench.RSS(pid)
				parts[part] += rss
				total += rss
			}
		}
	}
	k := float64(len(names))
	var by []string
	for _, part := range []string{"kube-apiserver", "etcd", "kube-controller-manager", "members"} {
		by = append(by, fmt.Sprintf("%s %.0f", part, parts[part]/k/mib))
	}
	b.ReportMetric(total/k/mib, "MiB-RSS/cluster")
	bench.Logf(b, "a workload cluster at rest: %.0f MiB RSS (%s MiB; its 3 etcd members included, the in-process kubelet not); %d clusters: %.1f GiB (%s)",
		total/k/mib, strings.Join(by, ", "), len(names), total/(1<<30), bench.HostLoad())
}
