package operator

import (
	"slices"
	"testing"
	"time"

	"github.com/etcdfleet/etcdfleet/memberctl/etcdbackup"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdcluster"
	"github.com/etcdfleet/etcdfleet/memberctl/etcddefrag"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdmember"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdsnapshot"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// Every controller that workload.Kinds names (For, AlsoFor, OwnedBy) has
// one row in the controllers table, and every row reconciles a kind of
// Kinds: a reconciler is added by a row in each, and nowhere else.
func TestControllersMatchKinds(t *testing.T) {
	var named []string
	for _, k := range workload.Kinds() {
		for _, n := range append(append([]string{k.For}, k.AlsoFor...), k.OwnedBy...) {
			if n != "" && !slices.Contains(named, n) {
				named = append(named, n)
			}
		}
	}
	var rows []string
	for _, c := range controllers() {
		if slices.Contains(rows, c.name) {
			t.Errorf("controller %s has two rows", c.name)
		}
		rows = append(rows, c.name)
		if reconciled, _ := workload.Watches(c.name); reconciled == nil {
			t.Errorf("controller %s reconciles no kind of workload.Kinds (For or AlsoFor)", c.name)
		}
	}
	slices.Sort(named)
	slices.Sort(rows)
	if !slices.Equal(named, rows) {
		t.Errorf("workload.Kinds names controllers %v, the table has %v", named, rows)
	}
}

// A part's options given as zero take that part's defaults whole; given
// options are kept as they are.
func TestOptionsDefaults(t *testing.T) {
	o := Options{}.withDefaults()
	if o.Workers != DefaultWorkers {
		t.Errorf("Workers %d, want %d", o.Workers, DefaultWorkers)
	}
	if o.Member.Resync != etcdmember.DefaultOptions().Resync || o.Member.Policy.Cap != etcdmember.DefaultOptions().Policy.Cap {
		t.Errorf("Member %+v, want etcdmember.DefaultOptions", o.Member)
	}
	if o.Snapshot.Image != etcdsnapshot.DefaultOptions().Image || o.Backup != etcdbackup.DefaultOptions() ||
		o.Defrag != etcddefrag.DefaultOptions() || o.Cluster != etcdcluster.DefaultOptions() {
		t.Errorf("Snapshot, Backup, Defrag or Cluster not defaulted: %+v %+v %+v %+v", o.Snapshot, o.Backup, o.Defrag, o.Cluster)
	}
	given := Options{Workers: 2, Defrag: etcddefrag.Options{Requeue: time.Second}}.withDefaults()
	if given.Workers != 2 || given.Defrag.Requeue != time.Second {
		t.Errorf("given options changed: workers %d, defrag %+v", given.Workers, given.Defrag)
	}
}
