package fleetdemo

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component/pod"
)

// health is what the live view says of one EtcdCluster.
type health string

const (
	// healthy: every member's Pod Ready, none terminal, and etcd itself
	// answering from every member under one leader (etcdProbe).
	healthy health = "healthy"
	// down: from its first terminal Pod, or the first view that finds a
	// cluster that was healthy not healthy (a terminal Pod can be replaced
	// between two views), until it is healthy again, even once its quorum
	// is back: a heal ends when the cluster is whole.
	down health = "down"
	// starting: never healthy yet, and no Pod terminal (bootstrap).
	starting health = "starting"
)

// clusterView is one row of the live view.
type clusterView struct {
	Name        string // workload/etcdcluster
	State       health
	Ready, Want int32
	Terminal    int
}

// viewOf computes the rows of one workload cluster from its EtcdClusters
// and its Pods as the apiserver has them, in one list each, and from etcd.
// The Pods come first: EtcdCluster status lags them by a reconcile, and a
// view read from status showed clusters healthy while their Pods were
// terminal (issue 27). etcd has the last word: a cluster whose Pods are all
// Ready is healthy only once etcdWhole (asked for no other cluster) finds
// every member answering under one leader. Status is read for the wanted
// replicas only. wasHealthy holds the clusters ever seen healthy; it is
// updated.
func viewOf(workload string, ecs []etcdv1.EtcdCluster, pods []corev1.Pod, wasHealthy map[string]bool, etcdWhole func(cluster string, want int32) bool) []clusterView {
	ready, terminal := map[string]int32{}, map[string]int{}
	for i := range pods {
		p := &pods[i]
		c := p.Labels[etcdv1.LabelCluster]
		switch {
		case pod.IsTerminal(p):
			terminal[c]++
		case p.DeletionTimestamp == nil && pod.IsReady(p):
			ready[c]++
		}
	}
	rows := make([]clusterView, 0, len(ecs))
	for i := range ecs {
		ec := &ecs[i]
		name := workload + "/" + ec.Name
		want := int32(1)
		if ec.Spec.Replicas != nil {
			want = *ec.Spec.Replicas
		}
		r := clusterView{Name: name, Ready: min(ready[ec.Name], want), Want: want, Terminal: terminal[ec.Name]}
		switch {
		case r.Terminal == 0 && ready[ec.Name] >= want && etcdWhole(ec.Name, want):
			r.State = healthy
			wasHealthy[name] = true
		case r.Terminal > 0 || wasHealthy[name]:
			r.State = down
		default:
			r.State = starting
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	return rows
}

func (r clusterView) String() string {
	return fmt.Sprintf("%-14s %-9s ready %d/%d  terminal %d", r.Name, r.State, r.Ready, r.Want, r.Terminal)
}

// liveView prints the view. On a terminal it is one table redrawn in
// place; otherwise (a pipe, a CI log) one line per cluster whose row
// changed, so that a log reads as the list of changes.
type liveView struct {
	out   io.Writer
	tty   bool
	drawn int                    // lines of the table last drawn (tty)
	last  map[string]clusterView // by cluster, as last printed
}

func newLiveView(out io.Writer) *liveView {
	return &liveView{out: out, tty: isTerminal(out), last: map[string]clusterView{}}
}

// isTerminal reports whether out is a character device (a terminal).
func isTerminal(out io.Writer) bool {
	f, ok := out.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// show prints rows, seen elapsed into phase what; note is the table's
// header extra on a terminal (the limiter's queue).
func (v *liveView) show(what string, elapsed time.Duration, rows []clusterView, note string) {
	stamp := fmt.Sprintf("[%s +%5.1fs]", what, elapsed.Seconds())
	if !v.tty {
		for _, r := range rows {
			if v.last[r.Name] != r {
				fmt.Fprintf(v.out, "%s %s\n", stamp, r)
				v.last[r.Name] = r
			}
		}
		return
	}
	var b strings.Builder
	if v.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", v.drawn) // back to the table's first line
	}
	lines := []string{stamp + "  " + note}
	for _, r := range rows {
		lines = append(lines, "  "+r.String())
	}
	for _, l := range lines {
		b.WriteString("\x1b[2K" + l + "\n") // clear the old line first
	}
	fmt.Fprint(v.out, b.String())
	v.drawn = len(lines)
}

// say prints a line between views (a failed read); on a terminal the
// table is drawn anew below it rather than over it.
func (v *liveView) say(line string) {
	fmt.Fprintln(v.out, line)
	v.drawn = 0
}

// done ends a phase: the next show starts a new table below this one.
func (v *liveView) done() {
	v.drawn = 0
	v.last = map[string]clusterView{}
}
