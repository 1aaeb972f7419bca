package workload

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Open is the opening every memberctl reconciler shares: it finds the
// engaged cluster clusterName, binds ctx to the cluster's lifetime and
// reads key into obj from the cluster's cache. done is never nil, and the
// caller defers it at once, error or not. On a NotFound error (test it
// with apierrors.IsNotFound) cl is set, so the caller can drop what it
// kept for the object; on an error finding the cluster it is nil.
func Open(ctx context.Context, src Source, clusterName string, key client.ObjectKey, obj client.Object) (_ context.Context, cl *Cluster, done func(), err error) {
	cl, err = src.Cluster(ctx, clusterName)
	if err != nil {
		return ctx, nil, func() {}, err
	}
	ctx, done = cl.Bind(ctx)
	if err := cl.Client.Get(ctx, key, obj); err != nil {
		return ctx, cl, done, err
	}
	return ctx, cl, done, nil
}
