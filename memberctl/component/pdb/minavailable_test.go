package pdb

import (
	"testing"

	"k8s.io/utils/ptr"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

func TestMinAvailable(t *testing.T) {
	for _, tc := range []struct {
		name     string
		spec     *int32
		observed *int32
		voters   int32
		want     int32
	}{
		{"spec default 3, 3 voters", nil, nil, 3, 2},
		{"spec 3, 2 voters left: keep the quorum of 3", ptr.To[int32](3), nil, 2, 2},
		{"spec 3, 1 voter", ptr.To[int32](3), nil, 1, 2},
		{"spec 3, 5 voters while scaling down", ptr.To[int32](3), nil, 5, 3},
		{"spec 5, 4 voters", ptr.To[int32](5), nil, 4, 3},
		{"observed wins over spec", ptr.To[int32](3), ptr.To[int32](7), 3, 4},
		{"observed 1, 1 voter", ptr.To[int32](5), ptr.To[int32](1), 1, 1},
		{"spec 1", ptr.To[int32](1), nil, 1, 1},
	} {
		ec := &v1alpha1.EtcdCluster{}
		ec.Spec.Replicas = tc.spec
		if tc.observed != nil {
			ec.Status.Observed = &v1alpha1.EtcdClusterObservedSpec{Replicas: *tc.observed}
		}
		if got := MinAvailable(ec, tc.voters); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
