package fleet_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
)

// quorumOrderSlack is how late a delete may follow the moment the limiter
// should have put its request first: a grant reaches the apiserver as a
// DELETE ~0.5 s later under load (the controller's own latency), and a
// member asks again when its requeue or a sibling's Pod wakes it.
const quorumOrderSlack = time.Second

// etcdClusterOf names the etcd cluster of a Pod named <cluster>-<suffix>.
func etcdClusterOf(w, pod string) string {
	if i := strings.LastIndex(pod, "-"); i > 0 {
		pod = pod[:i]
	}
	return w + "/" + pod
}

// terminalTimes maps each etcd cluster of workload cluster w (named as
// etcdClusterOf does) to when each of its Pods was first seen terminal by
// its apiserver, oldest first.
func terminalTimes(w string, l *e2eutil.PodLog) map[string][]time.Time {
	out := map[string][]time.Time{}
	for _, e := range l.FirstTerminal() {
		ec := etcdClusterOf(w, e.Name)
		out[ec] = append(out[ec], e.At)
	}
	for _, ts := range out {
		slices.SortFunc(ts, time.Time.Compare)
	}
	return out
}

// quorumLost maps each etcd cluster of workload cluster w to when it lost
// quorum as its apiserver saw it: the second of its three Pods first seen
// terminal.
func quorumLost(w string, l *e2eutil.PodLog) map[string]time.Time {
	out := map[string]time.Time{}
	for ec, ts := range terminalTimes(w, l) {
		if len(ts) >= 2 {
			out[ec] = ts[1]
		}
	}
	return out
}

// knownAt is when the limiter could first know that d restores its etcd
// cluster's quorum, which its apiserver showed lost (again) at lost: once
// d's member had asked, and a member of its etcd cluster asked after lost
// (it saw the quorum go; the limiter then wakes the others to ask again,
// Options.OnReask). Before that, no ask said so: a member notices a
// sibling's terminal Pod only when it reconciles, seconds later on a
// loaded machine with one worker per cluster.
func knownAt(lost time.Time, d podDelete, asks map[string]map[string]time.Time) time.Time {
	ec := etcdClusterOf(d.Cluster, d.Name)
	at := lost
	if a, ok := asks[d.Cluster][d.Name]; ok && a.After(at) {
		at = a
	}
	var seen time.Time
	for m, a := range asks[d.Cluster] {
		if etcdClusterOf(d.Cluster, m) == ec && !a.Before(lost) && (seen.IsZero() || a.Before(seen)) {
			seen = a
		}
	}
	if seen.After(at) {
		at = seen
	}
	return at
}

// quorumOrderViolations checks, from the apiservers' side, that the fleet
// restored quorums first. The k-th replacement of an etcd cluster of three
// restores its quorum when it is deleted after the (k+1)-th of its Pods was
// seen terminal (k ≤ 2): until then the Pods still up and the replacements
// already under way are a majority, as the limiter counts them. Once such
// a replacement was needed (that terminal Pod seen, and its member had
// asked the limiter), no replacement that restores no quorum, in another
// etcd cluster, may be deleted before it, give or take quorumOrderSlack. A
// FIFO, or a limiter that ignores quorum, fails it: w4 reboots while the
// others' third members queue, so its quorum-restoring members ask after
// them.
func quorumOrderViolations(ds []podDelete, logs map[string]*e2eutil.PodLog, asks map[string]map[string]time.Time) []string {
	terminal := map[string][]time.Time{} // etcd cluster -> Pods first terminal
	for w, l := range logs {
		maps.Copy(terminal, terminalTimes(w, l))
	}
	type step struct {
		podDelete
		urgentSince time.Time // restoring deletes: when the request should have gone first
		restoring   bool
	}
	var steps []step
	n := map[string]int{} // etcd cluster -> deletes so far (ds is oldest first)
	for _, d := range ds {
		ec := etcdClusterOf(d.Cluster, d.Name)
		n[ec]++
		s := step{podDelete: d}
		if k, ts := n[ec], terminal[ec]; k <= 2 && len(ts) > k && ts[k].Before(d.At) {
			s.restoring, s.urgentSince = true, knownAt(ts[k], d, asks)
		}
		steps = append(steps, s)
	}
	var out []string
	for _, q := range steps {
		if !q.restoring {
			continue
		}
		for _, x := range steps {
			if !x.restoring && etcdClusterOf(x.Cluster, x.Name) != etcdClusterOf(q.Cluster, q.Name) &&
				x.At.After(q.urgentSince.Add(quorumOrderSlack)) && x.At.Add(quorumOrderSlack).Before(q.At) {
				out = append(out, fmt.Sprintf("%s %s (restores no quorum) deleted at %s, before %s %s (restores its quorum; first since %s) at %s",
					x.Cluster, x.Name, x.At.Format("15:04:05.000"), q.Cluster, q.Name,
					q.urgentSince.Format("15:04:05.000"), q.At.Format("15:04:05.000")))
			}
		}
	}
	return out
}
