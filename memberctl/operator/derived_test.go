package operator

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// asked lists what checks ask, one "verb group/resource[/subresource]"
// each.
func asked(checks []AccessCheck) []string {
	var out []string
	for _, c := range checks {
		res := c.Resource
		if c.Subresource != "" {
			res += "/" + c.Subresource
		}
		for _, v := range c.Verbs {
			out = append(out, v+" "+c.Group+"/"+res)
		}
	}
	return out
}

// TestAccessChecks: the pre-flight asks, in the table's order, every verb
// workload.Permissions grants but the Events' (losing them loses no work),
// and of the port-forward only the verb of the access mode.
func TestAccessChecks(t *testing.T) {
	for _, a := range []Access{PortForward, PortForwardSPDY, Direct} {
		var want []string
		for _, p := range workload.Permissions() {
			for _, v := range p.Verbs {
				switch {
				case p.Group == "" && p.Resource == "events":
				case p.PortForward() && v != a.PortForwardVerb():
				default:
					want = append(want, v+" "+p.Group+"/"+p.RBACResource())
				}
			}
		}
		if got := asked(AccessChecks(a)); !slices.Equal(got, want) {
			t.Errorf("AccessChecks(%s) ask\n%v\nwant\n%v", a, got, want)
		}
	}
	// Mutating the checks must not change the table.
	AccessChecks(PortForward)[0].Verbs[0] = "escalate"
	if workload.Permissions()[0].Verbs[0] == "escalate" || AccessChecks(PortForward)[0].Verbs[0] == "escalate" {
		t.Error("AccessChecks share their verbs with the table")
	}
}

// TestAccessChecksCoverWhatFails: what the pre-flight must not miss, named
// here rather than read from the table. Without list and watch of a
// watched kind its informer never syncs; without the backup and defrag
// writes a cluster was shown Authorized=True while every backup failed.
func TestAccessChecksCoverWhatFails(t *testing.T) {
	got := asked(AccessChecks(Direct))
	want := []string{
		"create etcd.etcdfleet.io/etcdsnapshots", "patch etcd.etcdfleet.io/etcdsnapshots", "delete etcd.etcdfleet.io/etcdsnapshots",
		"update etcd.etcdfleet.io/etcdsnapshots/status", "update etcd.etcdfleet.io/etcdsnapshots/finalizers",
		"create etcd.etcdfleet.io/etcddefrags", "delete etcd.etcdfleet.io/etcddefrags", "update etcd.etcdfleet.io/etcddefrags/status",
		"create batch/jobs", "delete batch/jobs",
		"create /pods", "patch /pods", "delete /pods", "get /secrets",
	}
	for _, obj := range WatchedKinds() {
		plural, _ := meta.UnsafeGuessKindToResource(gvk(obj))
		want = append(want, "list "+plural.Group+"/"+plural.Resource, "watch "+plural.Group+"/"+plural.Resource)
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("pre-flight does not ask %s", w)
		}
	}
	for _, g := range got {
		if strings.HasSuffix(g, "/events") || strings.Contains(g, "portforward") {
			t.Errorf("pre-flight with Direct access asks %s", g)
		}
	}
}

// TestKindsAreConsistent checks what the derived views rely on.
func TestKindsAreConsistent(t *testing.T) {
	for _, name := range []string{workload.MemberController, workload.ClusterController, workload.SnapshotController, workload.BackupController, workload.DefragController} {
		if reconciled, _ := workload.Watches(name); reconciled == nil {
			t.Errorf("controller %s reconciles no kind", name)
		}
	}
	narrowed := map[string]bool{}
	for obj := range CacheByObject() {
		narrowed[gvk(obj).String()] = true
	}
	for _, k := range workload.Kinds() {
		g := gvk(k.Object)
		if k.Watched() && k.Uncached {
			t.Errorf("%s is watched but uncached: its informer could never sync", g)
		}
		if narrowed[g.String()] != k.ManagedOnly {
			t.Errorf("%s: cache narrowed %v, want %v", g, narrowed[g.String()], k.ManagedOnly)
		}
		m, err := RESTMapper().RESTMapping(g.GroupKind(), g.Version)
		if err != nil || m.Scope.Name() != k.Scope.Name() {
			t.Errorf("%s maps to %v (%v); want scope %s", g, m, err, k.Scope.Name())
		}
	}
}

// A cache scoped to namespaces (a namespaced registration) asks the
// RESTMapper about the list kind it is given; every kind's list must map,
// with the kind's own scope.
func TestRESTMapperMapsListKinds(t *testing.T) {
	for _, k := range workload.Kinds() {
		list := gvk(k.Object)
		list.Kind += "List"
		m, err := RESTMapper().RESTMapping(list.GroupKind(), list.Version)
		if err != nil {
			t.Errorf("%s: %v", list.Kind, err)
			continue
		}
		if m.Scope.Name() != k.Scope.Name() {
			t.Errorf("%s: scope %s, want %s", list.Kind, m.Scope.Name(), k.Scope.Name())
		}
	}
}
