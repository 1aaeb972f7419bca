package fleet_test

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/etcdfleet/etcdfleet/memberctl/gate"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
)

// quorumOrderSlack is the leeway of the grant-order checks between the
// limiter's grant lines and the apiserver's view of a member's ask: the
// status saying a member waits is written just after it asked, and the
// watch delivers it a little later under load.
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

// knownAt is when the limiter could first know that a grant to member of
// workload cluster w restores its etcd cluster ec's quorum, which its
// apiserver showed lost (again) at lost: once the member had asked, and a
// member of ec asked after lost. That ask carries a view with the quorum
// gone and restores it itself, and the limiter wakes the siblings queued
// as ordinary heals to ask again (Options.OnReask). Before that, no ask
// said so: a member notices a sibling's terminal Pod only when it
// reconciles, seconds later on a loaded machine with one worker per
// cluster.
func knownAt(lost time.Time, w, ec, member string, asks map[string]map[string]time.Time) time.Time {
	at := lost
	if a, ok := asks[w][member]; ok && a.After(at) {
		at = a
	}
	var seen time.Time
	for m, a := range asks[w] {
		if etcdClusterOf(w, m) == ec && !a.Before(lost) && (seen.IsZero() || a.Before(seen)) {
			seen = a
		}
	}
	if seen.After(at) {
		at = seen
	}
	return at
}

// orderedGrant is one heal grant with what its apiservers say of it.
type orderedGrant struct {
	loggedGrant
	restoring   bool
	urgentSince time.Time // restoring grants: since when the limiter knew
}

// servedBeforeQuorums checks the limiter's grant order (its grant lines,
// logged when it decides) against the quorums its apiservers showed. The
// k-th heal granted to an etcd cluster of three restores its quorum when
// it is granted after the (k+1)-th of its Pods was seen terminal (k ≤ 2):
// until then the Pods still up and the members granted before are a
// majority. Once the limiter could know that (knownAt), no grant that
// restores no quorum, of another etcd cluster, may come before it, give
// or take quorumOrderSlack. It returns the violations and the restoring
// grants with how long each waited from knownAt.
func servedBeforeQuorums(rebootAt time.Time, grants []loggedGrant, logs map[string]*e2eutil.PodLog,
	asks map[string]map[string]time.Time) (violations, restoring []string) {
	terminal := map[string][]time.Time{} // etcd cluster → its Pods first seen terminal
	for w, l := range logs {
		for ec, ts := range terminalTimes(w, l) {
			terminal[ec] = ts
		}
	}
	var steps []orderedGrant
	n := map[string]int{} // etcd cluster → heals granted so far
	for _, g := range grants {
		if g.at.Before(rebootAt) {
			continue
		}
		s := orderedGrant{loggedGrant: g}
		ec := g.cluster + "/" + g.etcdCluster
		if g.namespace == etcdNS && !gate.Action(g.action).Planned() {
			n[ec]++
			if k, ts := n[ec], terminal[ec]; k <= 2 && len(ts) > k && ts[k].Before(g.at) {
				s.restoring, s.urgentSince = true, knownAt(ts[k], g.cluster, ec, g.member, asks)
				restoring = append(restoring, fmt.Sprintf("%s/%s %s", g.cluster, g.member, g.at.Sub(s.urgentSince).Round(10*time.Millisecond)))
			}
		}
		steps = append(steps, s)
	}
	for _, q := range steps {
		for _, x := range steps {
			if !q.restoring || x.restoring || x.cluster+"/"+x.etcdCluster == q.cluster+"/"+q.etcdCluster && x.namespace == q.namespace {
				continue
			}
			if x.at.After(q.urgentSince.Add(quorumOrderSlack)) && x.at.Add(quorumOrderSlack).Before(q.at) {
				violations = append(violations, fmt.Sprintf("%s %s (%s, restores no quorum) granted at %s, before %s %s (restores its quorum; needed since %s) at %s",
					x.cluster, x.member, x.action, x.at.Format("15:04:05.000"), q.cluster, q.member,
					q.urgentSince.Format("15:04:05.000"), q.at.Format("15:04:05.000")))
			}
		}
	}
	return violations, restoring
}
