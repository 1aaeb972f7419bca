package workload

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// noCluster is a Source that knows no cluster: Open names the cluster and
// object on its logger before it looks the cluster up, so a reconcile
// that fails to find its cluster logs which one it was.
type noCluster struct{}

func (noCluster) Cluster(_ context.Context, name string) (*Cluster, error) {
	return nil, errors.New("unknown cluster " + name)
}

// TestOpenNamesTheClusterAndObjectInLogs: a line logged through Open's
// ctx says which workload cluster and which object it is about.
func TestOpenNamesTheClusterAndObjectInLogs(t *testing.T) {
	var lines []string
	ctx := log.IntoContext(context.Background(), funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{}))
	ctx, _, done, err := Open(ctx, noCluster{}, "w7", client.ObjectKey{Namespace: "ns", Name: "etcd-a-x1"}, &v1alpha1.EtcdMember{})
	done()
	if err == nil {
		t.Fatal("Open found a cluster the Source does not know")
	}
	log.FromContext(ctx).Info("Creating the member's Pod")
	want := `"workloadCluster"="w7" "etcdmember"="ns/etcd-a-x1"`
	if len(lines) != 1 || !strings.Contains(lines[0], want) {
		t.Errorf("logged %q, want it to contain %s", lines, want)
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
