package fleetdemo

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/bench"
	"github.com/etcdfleet/etcdfleet/test/timeline"
)

// recording is one workload cluster's Pods from just before the reboot
// on, as its apiserver's watch told them.
type recording struct {
	rec *bench.PodRecorder
	// old is each member Pod's UID at the reboot; clusterOf its
	// EtcdCluster.
	old       map[string]types.UID
	clusterOf map[string]string
}

// recordPods starts recording every workload cluster's Pods. The returned
// func stops the recorders.
func (d *driver) recordPods(ctx context.Context) (func(), error) {
	d.recs = map[string]*recording{}
	stop := func() {
		for _, r := range d.recs {
			r.rec.Stop()
		}
	}
	for _, w := range d.workloads {
		rec, err := bench.RecordPods(ctx, w.Clientset, etcdNamespace)
		if err != nil {
			stop()
			return nil, err
		}
		r := &recording{rec: rec, old: rec.UIDs(), clusterOf: map[string]string{}}
		d.recs[w.Name] = r
		var pods corev1.PodList
		if err := d.clients[w.Name].List(ctx, &pods, client.InNamespace(etcdNamespace)); err != nil {
			stop()
			return nil, err
		}
		for _, p := range pods.Items {
			r.clusterOf[p.Name] = p.Labels[etcdv1.LabelCluster]
		}
	}
	return stop, nil
}

// replaced reports whether every member Pod the reboot left behind was
// replaced by a Ready one, from the watches.
func (d *driver) replaced() bool {
	for _, r := range d.recs {
		if ok, _ := r.rec.Replaced(r.old); !ok {
			return false
		}
	}
	return true
}

// timeline gathers the heal's picture: one row per EtcdCluster from the
// Pod watches, the limiter's waits from the grant log, the bound the
// limiter allows, with 0 s at the first member Pod seen terminal.
func (d *driver) timeline(rebootAt time.Time, healed time.Duration) timeline.Timeline {
	var rows []timeline.Row
	var lastStarts []time.Duration
	replacements := 0
	var first time.Time
	for _, w := range sortedKeys(d.recs) {
		r := d.recs[w]
		events := r.rec.Events()
		byCluster := map[string]map[string]types.UID{}
		for n, uid := range r.old {
			c := r.clusterOf[n]
			if byCluster[c] == nil {
				byCluster[c] = map[string]types.UID{}
			}
			byCluster[c][n] = uid
		}
		for _, c := range sortedKeys(byCluster) {
			ms := bench.TimelineMembers(events, byCluster[c], d.grantOf(w))
			rows = append(rows, timeline.Row{Name: w + "/" + c, Members: ms})
			replacements += len(ms)
			for _, m := range ms {
				if !m.Terminal.IsZero() && (first.IsZero() || m.Terminal.Before(first)) {
					first = m.Terminal
				}
			}
			// etcd start: the replacement created last, as the bench
			// counts it (the others are up by then).
			if reps, err := r.rec.Replacements(byCluster[c]); err == nil {
				last := reps[0]
				for _, rep := range reps {
					if rep.Created.After(last.Created) {
						last = rep
					}
				}
				lastStarts = append(lastStarts, last.Start())
			}
		}
	}
	if first.IsZero() {
		first = rebootAt
	}
	t := timeline.Timeline{
		Title: fmt.Sprintf("make demo: %d EtcdClusters × 3 members healed %.1f s after the reboot (limiter %g/s, burst %d)",
			len(rows), healed.Seconds(), d.o.Rate, d.o.Burst),
		Origin: first,
		AxisLabel: fmt.Sprintf("seconds since the first member Pod was seen terminal (the reboot call: %.1f s)",
			rebootAt.Sub(first).Seconds()),
		Rows: rows,
	}
	// Without every replacement seen, the bound would be a guess: no line.
	if len(lastStarts) == len(rows) {
		t.Bound = timeline.LimiterBound(replacements, d.o.Burst, d.o.Rate, bench.Percentile(lastStarts, 0.5))
	}
	return t
}

// grantOf finds the grant of a member of workload w in the grant log.
func (d *driver) grantOf(w string) bench.GrantOf {
	if d.o.Grants == nil {
		return nil
	}
	grants := d.o.Grants.Grants()
	return func(member string, deleted time.Time) (time.Time, time.Duration, bool) {
		var found *Grant
		for i := range grants {
			g := &grants[i]
			if g.Cluster == w && g.Member == member && !g.At.After(deleted) {
				found = g
			}
		}
		if found == nil {
			return time.Time{}, 0, false
		}
		return found.At, found.Waited, true
	}
}

// writePicture writes the heal's picture to Options.TimelinePath.
func (d *driver) writePicture(t timeline.Timeline) error {
	svg, err := timeline.SVG(t)
	if err != nil {
		return err
	}
	if err := os.WriteFile(d.o.TimelinePath, svg, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "\n==> wrote %s: the heal, one row per EtcdCluster (open it in a browser)\n", d.o.TimelinePath)
	return nil
}
