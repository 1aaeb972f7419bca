package memberctl_test

import (
	"context"
	"errors"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdmember"
	"github.com/etcdfleet/etcdfleet/memberctl/operator"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
	"github.com/etcdfleet/etcdfleet/test/e2e/lincheck"
)

// startWorkload starts clients on an EtcdCluster whose history is checked
// for linearizability by StopAndCheck, once the fault has healed.
func startWorkload(ctx context.Context, cluster, ns, name string) *lincheck.Running {
	return lincheck.Start(ctx, lincheck.Target{Config: fleet.Cluster(cluster).Config, Client: clients[cluster], Namespace: ns, Cluster: name})
}

func getMember(ctx context.Context, c client.Client, ns, name string) *v1alpha1.EtcdMember {
	m := &v1alpha1.EtcdMember{}
	ExpectWithOffset(1, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, m)).To(Succeed())
	return m
}

func pod(ctx context.Context, c client.Client, ns, name string) *corev1.Pod {
	p := &corev1.Pod{}
	ExpectWithOffset(1, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, p)).To(Succeed())
	return p
}

func podNode(ctx context.Context, c client.Client, ns, name string) string {
	return pod(ctx, c, ns, name).Spec.NodeName
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

func warningEvents(ctx context.Context, cluster, ns, object, reason string) []corev1.Event {
	return eventsOf(ctx, cluster, ns, object, corev1.EventTypeWarning, reason)
}

// eventsOf returns the Events of type typ and reason recorded on object.
func eventsOf(ctx context.Context, cluster, ns, object, typ, reason string) []corev1.Event {
	list, err := fleet.Cluster(cluster).Clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	ExpectWithOffset(2, err).NotTo(HaveOccurred())
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Name == object && e.Reason == reason && e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// eventMessages are the messages of the Normal Events of reason on the
// EtcdCluster name.
func eventMessages(ctx context.Context, cluster, ns, name, reason string) []string {
	var out []string
	for _, e := range eventsOf(ctx, cluster, ns, name, corev1.EventTypeNormal, reason) {
		out = append(out, e.Message)
	}
	return out
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
