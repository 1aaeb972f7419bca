package workload

import (
	"context"
	"reflect"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// ClusterLogKey is the structured-log key naming the workload cluster of
// every line a memberctl reconcile logs.
const ClusterLogKey = "workloadCluster"

// Open is the opening every memberctl reconciler shares: it finds the
// engaged cluster clusterName, binds ctx to the cluster's lifetime and
// reads key into obj from the cluster's cache. done is never nil, and the
// caller defers it at once, error or not. On a NotFound error (test it
// with apierrors.IsNotFound) cl is set, so the caller can drop what it
// kept for the object; on an error finding the cluster it is nil.
//
// The returned ctx's logger names the workload cluster and the object
// (ObjectLogKey(obj): "etcdmember": "ns/name"). The multicluster request
// is not controller-runtime's reconcile.Request, so the controller does
// not add them itself, and without them a fleet's log lines say neither
// which of hundreds of clusters nor which member they are about.
func Open(ctx context.Context, src Source, clusterName string, key client.ObjectKey, obj client.Object) (_ context.Context, cl *Cluster, done func(), err error) {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues(ClusterLogKey, clusterName, ObjectLogKey(obj), key.String()))
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

// ObjectLogKey is the structured-log key naming a reconciled object: its
// Go type's name in lower case ("etcdcluster", "etcdmember"), as kubectl
// spells the resource's singular.
func ObjectLogKey(obj client.Object) string {
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return strings.ToLower(t.Name())
}
