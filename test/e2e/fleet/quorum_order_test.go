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

// quorumLost maps each etcd cluster of workload cluster w (named as
// etcdClusterOf does) to when it lost quorum as its apiserver saw it: the
// second of its three Pods first seen terminal.
func quorumLost(w string, l *e2eutil.PodLog) map[string]time.Time {
	terminal := map[string][]time.Time{}
	for _, e := range l.FirstTerminal() {
		ec := etcdClusterOf(w, e.Name)
		terminal[ec] = append(terminal[ec], e.At)
	}
	out := map[string]time.Time{}
	for ec, ts := range terminal {
		if len(ts) >= 2 {
			slices.SortFunc(ts, time.Time.Compare)
			out[ec] = ts[1]
		}
	}
	return out
}

// quorumOrderViolations checks, from the apiservers' side, that the fleet
// restored quorums first: once an etcd cluster had lost quorum (the
// second of its three Pods seen terminal) and a member of it had asked
// the limiter, no other etcd cluster's third replacement (one that
// restores no quorum: its own two went first) may be deleted before that
// member's, give or take quorumOrderSlack. A FIFO, or a limiter that
// ignores quorum, fails it: w4 reboots while the others' third members
// queue, so its quorum-restoring members ask after them.
func quorumOrderViolations(ds []podDelete, logs map[string]*e2eutil.PodLog, asks map[string]map[string]time.Time) []string {
	lost := map[string]time.Time{} // etcd cluster -> quorum lost
	for w, l := range logs {
		maps.Copy(lost, quorumLost(w, l))
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
		s := step{podDelete: d, restoring: n[ec] <= 2}
		if l, ok := lost[ec]; ok && s.restoring {
			s.urgentSince = l
			if a, ok := asks[d.Cluster][d.Name]; ok && a.After(l) {
				s.urgentSince = a
			}
		}
		steps = append(steps, s)
	}
	var out []string
	for _, q := range steps {
		if q.urgentSince.IsZero() {
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
