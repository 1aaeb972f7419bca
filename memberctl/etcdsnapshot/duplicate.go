package etcdsnapshot

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// duplicate fails s, before its Job exists, when another live EtcdSnapshot
// of the namespace stores to the same location (URI): the two would
// write, restore and delete the same object. Live is every snapshot that
// is not Failed, those being deleted included, as their cleanup may still
// remove the object. Of two that have not started, the older one (then
// the lower name) goes on, so that two created together do not both
// fail; one that started always keeps the location. The list comes from
// the apiserver, not the cache, which may not hold a snapshot created a
// moment ago.
func (st *run) duplicate(ctx context.Context) (bool, error) {
	s := st.s
	var all v1alpha1.EtcdSnapshotList
	if err := st.cl.Reader.List(ctx, &all, client.InNamespace(s.Namespace)); err != nil {
		return false, err
	}
	uri := URI(s)
	for i := range all.Items {
		o := &all.Items[i]
		if o.UID == s.UID || o.Status.Phase == v1alpha1.SnapshotFailed || URI(o) != uri || !takesPrecedence(o, s) {
			continue
		}
		msg := fmt.Sprintf("EtcdSnapshot %s already stores to %s; a location holds one snapshot: give this one another key or path", o.Name, uri)
		st.fail(v1alpha1.ReasonDuplicateLocation, msg)
		st.cl.Recorder.Eventf(s, corev1.EventTypeWarning, v1alpha1.ReasonDuplicateLocation, "refused: %s", msg)
		return true, nil
	}
	return false, nil
}

// takesPrecedence: o keeps a location that s also names.
func takesPrecedence(o, s *v1alpha1.EtcdSnapshot) bool {
	if o.Status.Phase != "" && o.Status.Phase != v1alpha1.SnapshotPending {
		return true // started or stored
	}
	if !o.CreationTimestamp.Equal(&s.CreationTimestamp) {
		return o.CreationTimestamp.Before(&s.CreationTimestamp)
	}
	return o.Name < s.Name
}
