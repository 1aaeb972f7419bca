package fleetdemo

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/etcdfleet/etcdfleet/test/timeline"
)

// TestDemoSmoke runs `make demo`'s main job on 2 workload clusters of one
// EtcdCluster each, with a short outage and a limiter of burst 1 so that
// some replacements wait for it, and without the backup part. It checks
// that the fleet heals and every key survives (Run fails otherwise), that
// the live view never called a cluster healthy while one of its Pods was
// terminal, and that heal-timeline.svg is written, well-formed, with a row
// per cluster and every state drawn. The demo broke twice unnoticed
// before this test ran in make test.
func TestDemoSmoke(t *testing.T) {
	grants := &GrantLog{}
	ctrl.SetLogger(logr.New(grants.Sink(zap.New(zap.WriteTo(io.Discard)).GetSink())))
	klog.SetLogger(logr.Discard())
	o := DefaultOptions()
	o.Clusters, o.EtcdClustersPer, o.Keys = 2, 1, 10
	o.Outage, o.Backups, o.Grants = 500*time.Millisecond, false, grants
	// 6 replacements at burst 1 and 1/s: every request that comes within
	// a second of the last grant waits for a token, so the picture shows
	// the limiter. At burst 2 and 2/s the reboot's graceful stops spread
	// the requests enough on a loaded machine that none waited (CI-F).
	o.Rate, o.Burst = 1, 1
	// A 2-cluster heal takes seconds; the rest of the budget is for a
	// loaded CI machine, within the 90 s the smoke test is allowed.
	o.HealTimeout = 60 * time.Second
	o.TimelinePath = filepath.Join(t.TempDir(), "heal-timeline.svg")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	res, err := Run(ctx, &out, o)
	t.Logf("demo output:\n%s", out.String())
	if err != nil {
		t.Fatalf("demo: %v", err)
	}
	if strings.Contains(out.String(), "\x1b") {
		t.Error("terminal escapes in output that is not a terminal")
	}
	if os.Getenv("DEMO_DEBUG") == "1" {
		for w, evs := range res.HealPods {
			for _, e := range evs {
				t.Logf("%s %s %s %s uid=%s phase=%s ready=%v del=%v rv=%s", w, e.At.Format("15:04:05.000"), e.Type, e.Name, e.UID[len(e.UID)-4:], e.Phase, e.Ready, e.Deleting, e.RV)
			}
		}
		for _, v := range res.Views {
			if v.Phase == "heal" {
				t.Logf("view %s rv=%s %v", v.Workload, v.PodsRV, v.Rows)
			}
		}
	}
	checkViewTruth(t, res)
	checkPicture(t, o.TimelinePath, []string{"w1/etcd-a", "w2/etcd-a"})
	if keep := os.Getenv("DEMO_KEEP_SVG"); keep != "" { // to look at it
		if b, err := os.ReadFile(o.TimelinePath); err == nil {
			_ = os.WriteFile(keep, b, 0o644)
		}
	}
}

// checkViewTruth replays each workload cluster's Pod watch up to the
// resourceVersion of every Pod list the live view was computed from, and
// fails if a row said healthy while one of its cluster's Pods was
// terminal then. It also fails if no row ever said down: a view that never
// saw the outage proves nothing.
func checkViewTruth(t *testing.T, res *Result) {
	t.Helper()
	sawDown := map[string]bool{}
	for _, v := range res.Views {
		if v.Phase != "heal" {
			continue
		}
		at := rv(t, v.PodsRV)
		terminal := map[string]bool{} // Pod UID
		names := map[string]string{}  // UID -> Pod name
		for _, e := range res.HealPods[v.Workload] {
			if rv(t, e.RV) > at {
				break
			}
			names[string(e.UID)] = e.Name
			switch {
			case e.Type == watch.Deleted:
				delete(terminal, string(e.UID))
			case e.Terminal():
				terminal[string(e.UID)] = true
			}
		}
		for _, r := range v.Rows {
			if r.State == down {
				sawDown[r.Name] = true
			}
			if r.State != healthy {
				continue
			}
			cluster := strings.TrimPrefix(r.Name, v.Workload+"/")
			for uid := range terminal {
				if strings.HasPrefix(names[uid], cluster+"-") {
					t.Errorf("the live view said %s healthy at resourceVersion %s, while its Pod %s was terminal", r.Name, v.PodsRV, names[uid])
				}
			}
		}
	}
	for _, c := range []string{"w1/etcd-a", "w2/etcd-a"} {
		if !sawDown[c] {
			t.Errorf("the live view never showed %s down during the heal", c)
		}
	}
}

// rv reads a resourceVersion as the number it is on a real apiserver, so
// that a list and a watch event of the same apiserver can be ordered.
func rv(t *testing.T, s string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", s, err)
	}
	return n
}

// checkPicture checks the SVG at path is well-formed, names every row and
// draws every state, the limiter's bound and an axis.
func checkPicture(t *testing.T, path string, rows []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the demo wrote no picture: %v", err)
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	states := map[string]int{}
	texts := map[string]bool{}
	bound := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed: %v", path, err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		for _, a := range se.Attr {
			switch {
			case a.Name.Local == "data-state":
				states[a.Value]++
			case a.Name.Local == "class" && a.Value == "bound" && se.Name.Local == "line":
				bound = true
			}
		}
		if se.Name.Local == "text" {
			var s string
			if err := dec.DecodeElement(&s, &se); err != nil {
				t.Fatal(err)
			}
			texts[s] = true
		}
	}
	for _, s := range timeline.States {
		// One legend swatch each, and at least one span.
		if states[s.String()] < 2 {
			t.Errorf("no %q span in the picture (%v)", s, states)
		}
	}
	for _, r := range rows {
		if !texts[r] {
			t.Errorf("no row %s in the picture", r)
		}
	}
	if !bound {
		t.Error("no limiter bound line in the picture")
	}
}
