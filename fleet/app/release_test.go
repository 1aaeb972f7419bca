package app

import (
	"context"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// updateRecorder is the coordinator's client underneath quiescingReleases:
// it records the Updates that reach the apiserver, in order with the
// quiesce calls.
type updateRecorder struct {
	client.WithWatch // nil: only Update is called
	log              *[]string
}

func (u updateRecorder) Update(_ context.Context, obj client.Object, _ ...client.UpdateOption) error {
	*u.log = append(*u.log, "update "+obj.GetName())
	return nil
}

// TestFenceReleaseQuiescesTheClusterFirst: multicluster-runtime clears
// the fence's holder with an Update; the cluster's requests must have
// stopped before that Update is sent, and no other Lease write waits.
func TestFenceReleaseQuiescesTheClusterFirst(t *testing.T) {
	var log []string
	c := quiescingReleases(updateRecorder{log: &log}, "fleet", "mcr-shard-", func(_ context.Context, cluster string) error {
		log = append(log, "quiesce "+cluster)
		return nil
	})
	lease := func(ns, name, holder string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder)}}
	}
	for _, l := range []*coordinationv1.Lease{
		lease("fleet", "mcr-shard-w1", "r1"),  // a renewal
		lease("fleet", "mcr-peer-r1", ""),     // not a fence
		lease("other", "mcr-shard-w1", ""),    // another namespace
		lease("fleet", "mcr-shard-w2.eu", ""), // a release
	} {
		if err := c.Update(context.Background(), l); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"update mcr-shard-w1", "update mcr-peer-r1", "update mcr-shard-w1", "quiesce w2.eu", "update mcr-shard-w2.eu"}
	if len(log) != len(want) {
		t.Fatalf("got %q, want %q", log, want)
	}
	for i := range want {
		if log[i] != want[i] {
			t.Fatalf("got %q, want %q", log, want)
		}
	}
}
