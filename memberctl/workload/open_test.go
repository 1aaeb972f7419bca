package workload

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// TestOpenNamesTheClusterAndObjectInLogs: a line logged through Open's
// ctx says which workload cluster and which object it is about, found or
// not (a NotFound reconcile still logs what it forgets).
func TestOpenNamesTheClusterAndObjectInLogs(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	m := &v1alpha1.EtcdMember{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "etcd-a-x1"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(m).Build()
	for _, name := range []string{"etcd-a-x1", "gone"} {
		var lines []string
		ctx := log.IntoContext(context.Background(), funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{}))
		ctx, _, done, err := Open(ctx, Static{C: &Cluster{Name: "w7", Client: c}}, "w7", client.ObjectKey{Namespace: "ns", Name: name}, &v1alpha1.EtcdMember{})
		done()
		if name == "gone" && !apierrors.IsNotFound(err) || name != "gone" && err != nil {
			t.Fatalf("%s: Open: %v", name, err)
		}
		log.FromContext(ctx).Info("Creating the member's Pod")
		want := `"workloadCluster"="w7" "etcdmember"="ns/` + name + `"`
		if len(lines) != 1 || !strings.Contains(lines[0], want) {
			t.Errorf("%s: logged %q, want it to contain %s", name, lines, want)
		}
	}
}

func TestObjectLogKeyIsTheLowerCaseKind(t *testing.T) {
	for obj, want := range map[client.Object]string{
		&v1alpha1.EtcdCluster{}:  "etcdcluster",
		&v1alpha1.EtcdMember{}:   "etcdmember",
		&v1alpha1.EtcdSnapshot{}: "etcdsnapshot",
		&v1alpha1.EtcdDefrag{}:   "etcddefrag",
	} {
		if got := ObjectLogKey(obj); got != want {
			t.Errorf("ObjectLogKey(%T) = %q, want %q", obj, got, want)
		}
	}
}
