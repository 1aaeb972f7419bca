package operator

import (
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// restMapper is built once and shared by every workload cluster.
var restMapper = sync.OnceValue(func() meta.RESTMapper {
	namespaced := []schema.GroupVersionKind{
		corev1.SchemeGroupVersion.WithKind("Pod"),
		corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"),
		corev1.SchemeGroupVersion.WithKind("Service"),
		corev1.SchemeGroupVersion.WithKind("Secret"),
		corev1.SchemeGroupVersion.WithKind("Event"),
		eventsv1.SchemeGroupVersion.WithKind("Event"),
		coordinationv1.SchemeGroupVersion.WithKind("Lease"),
		policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"),
		v1alpha1.GroupVersion.WithKind("EtcdCluster"),
		v1alpha1.GroupVersion.WithKind("EtcdMember"),
	}
	clusterScoped := []schema.GroupVersionKind{
		corev1.SchemeGroupVersion.WithKind("Namespace"),
		corev1.SchemeGroupVersion.WithKind("Node"),
	}
	m := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range namespaced {
		m.Add(gvk, meta.RESTScopeNamespace)
	}
	for _, gvk := range clusterScoped {
		m.Add(gvk, meta.RESTScopeRoot)
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
