package workload

import (
	"context"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// The reconcilers, by controller name.
const (
	MemberController   = "etcdmember"
	ClusterController  = "etcdcluster"
	SnapshotController = "etcdsnapshot"
	BackupController   = "etcdbackup"
	DefragController   = "etcddefrag"
	// DefragScheduleController reconciles EtcdClusters too (their
	// spec.defrag), with a queue of its own (Kind.AlsoFor).
	DefragScheduleController = "etcddefragschedule"
)

// Kind is one kind the reconcilers use in a workload cluster and
// everything that follows from it: which controller watches it, how it is
// cached and how it is mapped. Kinds is the only list of them; watches,
// cache options, the RESTMapper and the Scheme are all derived from it (see
// memberctl/operator); the RBAC and the pre-flight access checks come from
// Permissions, whose list and watch rows a test holds to the watched kinds.
type Kind struct {
	Object client.Object
	// Scope of the kind, for the static RESTMapper.
	Scope meta.RESTScope
	// For names the controller that reconciles objects of this kind.
	For string
	// AlsoFor names further controllers that reconcile objects of this
	// kind, each with its own queue.
	AlsoFor []string
	// OwnedBy names the controllers woken when an object of this kind that
	// they own changes (builder Owns).
	OwnedBy []string
	// ManagedOnly narrows the kind's cache to objects labelled
	// managed-by=etcdfleet: a cluster's unrelated Pods must not grow our
	// memory.
	ManagedOnly bool
	// Uncached kinds are read straight from the apiserver. Secrets hold TLS
	// material, are read by name only, and the RBAC grants get, not
	// list/watch, so a cache (a cluster-wide informer) could never sync.
	Uncached bool
}

// Watched reports whether a controller watches the kind: its informer must
// sync before a cluster is engaged, and the credentials need list and watch.
func (k Kind) Watched() bool { return k.For != "" || len(k.AlsoFor) > 0 || len(k.OwnedBy) > 0 }

var (
	namespaced = meta.RESTScopeNamespace
	root       = meta.RESTScopeRoot
)

// Kinds lists every kind the reconcilers use in a workload cluster.
func Kinds() []Kind {
	return []Kind{
		{Object: &v1alpha1.EtcdCluster{}, Scope: namespaced, For: ClusterController, AlsoFor: []string{BackupController, DefragScheduleController}},
		{Object: &v1alpha1.EtcdMember{}, Scope: namespaced, For: MemberController, OwnedBy: []string{ClusterController}},
		{Object: &corev1.Pod{}, Scope: namespaced, OwnedBy: []string{MemberController}, ManagedOnly: true},
		{Object: &corev1.PersistentVolumeClaim{}, Scope: namespaced, OwnedBy: []string{MemberController}, ManagedOnly: true},
		{Object: &corev1.Service{}, Scope: namespaced, OwnedBy: []string{ClusterController}, ManagedOnly: true},
		{Object: &policyv1.PodDisruptionBudget{}, Scope: namespaced, OwnedBy: []string{ClusterController}, ManagedOnly: true},
		{Object: &v1alpha1.EtcdSnapshot{}, Scope: namespaced, For: SnapshotController, OwnedBy: []string{BackupController}},
		{Object: &batchv1.Job{}, Scope: namespaced, OwnedBy: []string{SnapshotController}, ManagedOnly: true},
		{Object: &v1alpha1.EtcdDefrag{}, Scope: namespaced, For: DefragController},
		{Object: &corev1.Secret{}, Scope: namespaced, Uncached: true},
		// Written or read by name only, never watched.
		{Object: &corev1.Event{}, Scope: namespaced},
		{Object: &eventsv1.Event{}, Scope: namespaced},
		{Object: &coordinationv1.Lease{}, Scope: namespaced},
		{Object: &corev1.Namespace{}, Scope: root},
		{Object: &corev1.Node{}, Scope: root},
	}
}

// AddToScheme adds to s every kind of Kinds: the built-in ones and
// etcd.etcdfleet.io.
func AddToScheme(s *runtime.Scheme) error {
	b := runtime.NewSchemeBuilder(clientgoscheme.AddToScheme, v1alpha1.AddToScheme)
	return b.AddToScheme(s)
}

// Watches returns what the controller named name reconciles (For) and the
// kinds it owns (Owns), in Kinds order.
func Watches(name string) (reconciled client.Object, owned []client.Object) {
	for _, k := range Kinds() {
		if k.For == name || slices.Contains(k.AlsoFor, name) {
			reconciled = k.Object
		}
		if slices.Contains(k.OwnedBy, name) {
			owned = append(owned, k.Object)
		}
	}
	return reconciled, owned
}

// Reconciler reconciles objects of any workload cluster, named with each
// request ("" for a single cluster).
type Reconciler interface {
	Reconcile(ctx context.Context, clusterName string, req types.NamespacedName) (reconcile.Result, error)
}
