package component_test

import (
	"context"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/envtestenv"
)

// Env is the real kube-apiserver and etcd (envtest), with the workload CRDs
// installed, that the Syncers' specs run against; its methods build the
// owner objects they need.
type Env struct {
	env *envtestenv.Env
	// Client talks to the apiserver directly (no cache), so every read
	// sees the previous write.
	Client client.WithWatch
}

// Start starts the control plane from KUBEBUILDER_ASSETS.
func Start() (*Env, error) {
	env, err := envtestenv.Start(envtestenv.WorkloadCRDs, v1alpha1.AddToScheme)
	if err != nil {
		return nil, err
	}
	return &Env{env: env, Client: env.Client}, nil
}

// Stop stops the control plane.
func (e *Env) Stop() error {
	if e == nil {
		return nil
	}
	return e.env.Stop()
}

// CountingClient returns Client wrapped so that every write request
// (create, update, patch, delete, apply, on objects or subresources) is
// counted. The apiserver does not bump resourceVersion on a no-op patch, so
// only counting requests shows that a Sync made no write at all.
func (e *Env) CountingClient() (client.Client, *atomic.Int32) {
	n := &atomic.Int32{}
	count := func() { n.Add(1) }
	return interceptor.NewClient(e.Client, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			count()
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			count()
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			count()
			return c.Patch(ctx, obj, p, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			count()
			return c.Delete(ctx, obj, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			count()
			return c.Apply(ctx, obj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			count()
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			count()
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	}), n
}

// Namespace creates a namespace with a generated name and returns the name.
// envtest runs no namespace controller, so namespaces are never cleaned
// up; fresh ones keep specs from seeing each other's objects.
func (e *Env) Namespace(ctx context.Context) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "component-"}}
	if err := e.Client.Create(ctx, ns); err != nil {
		return "", err
	}
	return ns.Name, nil
}

// Cluster creates a minimal valid EtcdCluster and returns it (with its UID).
func (e *Env) Cluster(ctx context.Context, ns, name string) (*v1alpha1.EtcdCluster, error) {
	ec := &v1alpha1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.EtcdClusterSpec{
			Version: "3.6.16",
			// Go clients always send storage.size; zero would be rejected.
			Storage: v1alpha1.StorageSpec{Size: resource.MustParse(v1alpha1.DefaultStorageSize)},
		},
	}
	return ec, e.Client.Create(ctx, ec)
}

// Member creates an EtcdMember of cluster after applying mutate, and
// returns it (with its UID). Status fields set by mutate are not written
// (status is a subresource) but stay on the returned object, which is
// what Sync functions read.
func (e *Env) Member(ctx context.Context, ns, cluster, name string, mutate ...func(*v1alpha1.EtcdMember)) (*v1alpha1.EtcdMember, error) {
	m := &v1alpha1.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.EtcdMemberSpec{
			ClusterName:    cluster,
			Version:        "3.6.16",
			Storage:        v1alpha1.StorageSpec{Size: resource.MustParse(v1alpha1.DefaultStorageSize)},
			InitialCluster: name + "=http://" + name + "." + cluster + "." + ns + ".svc:2380",
			ClusterToken:   ns + "-" + cluster,
		},
	}
	for _, f := range mutate {
		f(m)
	}
	status := m.Status
	if err := e.Client.Create(ctx, m); err != nil {
		return nil, err
	}
	m.Status = status
	return m, nil
}

// StaleOwner returns a controller ownerRef to an object of the given kind
// and name but another UID: what objects of a deleted and re-created owner
// carry until the garbage collector removes them.
func StaleOwner(kind, name string) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: kind, Name: name,
		UID: "00000000-0000-0000-0000-00000000dead", Controller: ptr.To(true),
	}
}
