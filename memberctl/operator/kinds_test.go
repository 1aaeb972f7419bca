package operator

import (
	"reflect"
	"testing"

	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// TestAccessChecks: the pre-flight asks exactly what the reconcilers need:
// list and watch of every watched kind, under its real resource name, the
// port-forward verb of the access mode, and the writes.
func TestAccessChecks(t *testing.T) {
	lw := []string{"list", "watch"}
	watched := []AccessCheck{
		{Group: "etcd.etcdfleet.io", Resource: "etcdclusters", Verbs: lw},
		{Group: "etcd.etcdfleet.io", Resource: "etcdmembers", Verbs: lw},
		{Resource: "pods", Verbs: lw},
		{Resource: "persistentvolumeclaims", Verbs: lw},
		{Resource: "services", Verbs: lw},
		{Group: "policy", Resource: "poddisruptionbudgets", Verbs: lw},
		{Group: "etcd.etcdfleet.io", Resource: "etcdsnapshots", Verbs: lw},
		{Group: "batch", Resource: "jobs", Verbs: lw},
		{Group: "etcd.etcdfleet.io", Resource: "etcddefrags", Verbs: lw},
	}
	etcd := "etcd.etcdfleet.io"
	writes := []AccessCheck{
		{Group: etcd, Resource: "etcdclusters", Subresource: "status", Verbs: []string{"update"}},
		{Group: etcd, Resource: "etcdclusters", Subresource: "finalizers", Verbs: []string{"update"}},
		{Group: etcd, Resource: "etcdmembers", Verbs: []string{"create", "patch", "delete"}},
		{Group: etcd, Resource: "etcdmembers", Subresource: "status", Verbs: []string{"update", "patch"}},
		{Group: etcd, Resource: "etcdmembers", Subresource: "finalizers", Verbs: []string{"update"}},
		{Resource: "pods", Verbs: []string{"create", "patch", "delete"}},
		{Resource: "persistentvolumeclaims", Verbs: []string{"create"}},
		{Resource: "services", Verbs: []string{"create", "patch"}},
		{Group: "policy", Resource: "poddisruptionbudgets", Verbs: []string{"create", "patch", "delete"}},
		{Resource: "secrets", Verbs: []string{"get"}},
	}
	portForward := func(verb string) []AccessCheck {
		out := append(append([]AccessCheck(nil), watched...), AccessCheck{Resource: "pods", Subresource: "portforward", Verbs: []string{verb}})
		return append(out, writes...)
	}
	for a, want := range map[Access][]AccessCheck{
		PortForward: portForward("get"), PortForwardSPDY: portForward("create"), Direct: append(append([]AccessCheck(nil), watched...), writes...),
	} {
		if got := AccessChecks(a); !reflect.DeepEqual(got, want) {
			t.Errorf("AccessChecks(%s) =\n%+v\nwant\n%+v", a, got, want)
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
