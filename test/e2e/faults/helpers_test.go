package faults_test

import (
	"context"
	"errors"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdmember"
	"github.com/etcdfleet/etcdfleet/memberctl/operator"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

func getMember(ctx context.Context, c client.Client, ns, name string) *v1alpha1.EtcdMember {
	m := &v1alpha1.EtcdMember{}
	ExpectWithOffset(1, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, m)).To(Succeed())
	return m
}

func setAnnotation(ctx context.Context, c client.Client, ns, name, value string) {
	m := getMember(ctx, c, ns, name)
	patch := client.MergeFrom(m.DeepCopy())
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[v1alpha1.AnnotationReplaceNow] = value
	ExpectWithOffset(1, c.Patch(ctx, m, patch)).To(Succeed())
}

// failingStatusReconciler is a member reconciler on the real apiserver
// whose EtcdMember status writes fail, as a conflict would.
func failingStatusReconciler(ctx context.Context, cluster, ns, name string) (*etcdmember.Reconciler, types.NamespacedName) {
	real := clients[cluster]
	failing := interceptor.NewClient(real, interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if _, ok := obj.(*v1alpha1.EtcdMember); ok && sub == "status" {
				return errors.New("injected status write failure")
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
	cl, _, err := operator.NewCluster(operator.ClusterConfig{REST: fleet.Cluster(cluster).Config, Client: failing, Reader: real,
		Recorder: record.NewFakeRecorder(100), Access: operator.PortForward})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return &etcdmember.Reconciler{Clusters: workload.Static{C: cl}, Options: etcdmember.DefaultOptions()},
		types.NamespacedName{Namespace: ns, Name: name}
}
