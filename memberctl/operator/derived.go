package operator

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// Everything below is derived from workload.Kinds, the one list of the
// kinds the reconcilers use in a workload cluster, but AccessChecks, which
// is derived from workload.Permissions, the one table of their RBAC.

// AddToScheme adds every kind the reconcilers use (workload.AddToScheme).
var AddToScheme = workload.AddToScheme

// Scheme is a new Scheme with every kind the reconcilers use.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		panic(err) // only on a programming error in the scheme builders
	}
	return s
}

// sharedScheme only resolves kinds to GVKs in this file; never add to it.
var sharedScheme = sync.OnceValue(Scheme)

func gvk(obj client.Object) schema.GroupVersionKind {
	g, err := apiutil.GVKForObject(obj, sharedScheme())
	if err != nil {
		panic(err) // every kind of workload.Kinds is in the Scheme
	}
	return g
}

// CacheByObject narrows the caches of the kinds the reconcilers own to the
// objects etcdfleet manages.
func CacheByObject() map[client.Object]cache.ByObject {
	sel := v1alpha1.ManagedByLabelSelector()
	out := map[client.Object]cache.ByObject{}
	for _, k := range workload.Kinds() {
		if k.ManagedOnly {
			out[k.Object] = cache.ByObject{Label: sel}
		}
	}
	return out
}

// UncachedObjects are read straight from the apiserver (see
// workload.Kind.Uncached).
func UncachedObjects() []client.Object {
	var out []client.Object
	for _, k := range workload.Kinds() {
		if k.Uncached {
			out = append(out, k.Object)
		}
	}
	return out
}

// WatchedKinds are the kinds some controller watches: their informers must
// sync before a cluster is engaged.
func WatchedKinds() []client.Object {
	var out []client.Object
	for _, k := range workload.Kinds() {
		if k.Watched() {
			out = append(out, k.Object)
		}
	}
	return out
}

// restMapper is built once and shared by every workload cluster.
var restMapper = sync.OnceValue(func() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, k := range workload.Kinds() {
		g := gvk(k.Object)
		m.Add(g, k.Scope)
		// The list kind too: a cache scoped to namespaces (namespaced
		// registrations) asks the mapper whether the list it is given is
		// namespaced, by the list's own kind (controller-runtime's
		// multiNamespaceCache.List), and without it every List failed with
		// "no matches for kind EtcdMemberList".
		g.Kind += "List"
		m.Add(g, k.Scope)
	}
	return m
})

// RESTMapper maps exactly the kinds the reconcilers use in a workload
// cluster, with their built-in scopes. It is immutable and shared by every
// workload cluster: a discovery-backed mapper per cluster keeps the whole
// aggregated discovery document of that cluster, about 0.3 MiB each, to map
// these few kinds. The price is that a kind missing from the workload
// cluster is not found here but at the first list: pre-flight checks that
// the watched kinds are served (kubeconfigsecret), so that is reported
// before engaging, as the missing CRDs it almost always is.
func RESTMapper() meta.RESTMapper { return restMapper() }

// AccessCheck is one permission the reconcilers need cluster-wide in a
// workload cluster (the shape of a SelfSubjectAccessReview).
type AccessCheck struct {
	Group       string
	Resource    string
	Subresource string
	Verbs       []string
}

// AccessChecks are the permissions pre-flight checks with etcd access a:
// every Preflighted row of workload.Permissions, the table the workload
// RBAC is generated from, verb for verb (the list and watch of the watched
// kinds and every write alike), but for the port-forward, of which only
// a's verb is asked (none for Direct).
func AccessChecks(a Access) []AccessCheck {
	var out []AccessCheck
	for _, p := range workload.Permissions() {
		if !p.Preflighted() {
			continue
		}
		verbs := slices.Clone(p.Verbs)
		if p.PortForward() {
			verb := a.PortForwardVerb()
			if verb == "" {
				continue
			}
			verbs = []string{verb}
		}
		out = append(out, AccessCheck{Group: p.Group, Resource: p.Resource, Subresource: p.Subresource, Verbs: verbs})
	}
	return out
}
