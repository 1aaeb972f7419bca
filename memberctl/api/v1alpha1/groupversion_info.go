package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of the workload-cluster kinds.
const GroupName = "etcd.etcdfleet.io"

var (
	// SchemeGroupVersion is the group and version the kinds are registered under.
	SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}
	// GroupVersion is an alias of SchemeGroupVersion, in the kubebuilder style.
	GroupVersion = SchemeGroupVersion

	// SchemeBuilder registers the kinds of this package.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds EtcdCluster, EtcdMember and EtcdSnapshot (and their lists) to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Resource returns a GroupResource of this group, for API errors.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&EtcdCluster{}, &EtcdClusterList{},
		&EtcdMember{}, &EtcdMemberList{},
		&EtcdSnapshot{}, &EtcdSnapshotList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
