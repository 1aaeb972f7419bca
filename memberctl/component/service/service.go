package service

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

// BuildHeadless returns the headless Service of ec, without an ownerRef.
func BuildHeadless(ec *v1alpha1.EtcdCluster) *corev1.Service {
	headless := base(ec, etcd.HeadlessService(ec.Name))
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	headless.Spec.PublishNotReadyAddresses = true
	headless.Spec.Ports = []corev1.ServicePort{
		port(component.ClientPortName, etcd.ClientPort),
		port(component.PeerPortName, etcd.PeerPort),
	}
	return headless
}

// BuildClient returns the client Service of ec, without an ownerRef.
func BuildClient(ec *v1alpha1.EtcdCluster) *corev1.Service {
	clientSvc := base(ec, etcd.ClientService(ec.Name))
	clientSvc.Spec.Ports = []corev1.ServicePort{port(component.ClientPortName, etcd.ClientPort)}
	return clientSvc
}

func base(ec *v1alpha1.EtcdCluster, name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ec.Namespace, Labels: v1alpha1.ClusterLabels(ec.Name)},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: map[string]string{v1alpha1.LabelCluster: ec.Name},
		},
	}
}

func port(name string, p int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: p, TargetPort: intstr.FromInt32(p), Protocol: corev1.ProtocolTCP}
}

// Syncer syncs one of the two Services of a cluster.
type Syncer struct {
	client client.Client
	build  func(*v1alpha1.EtcdCluster) *corev1.Service
}

var _ component.Syncer[*v1alpha1.EtcdCluster, *corev1.Service] = Syncer{}

// NewHeadless returns the Syncer of the headless Service, writing through c.
func NewHeadless(c client.Client) Syncer { return Syncer{client: c, build: BuildHeadless} }

// NewClient returns the Syncer of the client Service, writing through c.
func NewClient(c client.Client) Syncer { return Syncer{client: c, build: BuildClient} }

// Syncers returns the Syncers of both Services, headless first.
func Syncers(c client.Client) []Syncer { return []Syncer{NewHeadless(c), NewClient(c)} }

// Sync ensures the Service exists and matches in the fields the operator
// owns, and returns it.
func (o Syncer) Sync(ctx context.Context, ec *v1alpha1.EtcdCluster) (*corev1.Service, error) {
	return component.Ensure(ctx, o.client, component.Object[*corev1.Service]{
		Owner: ec, OwnerKind: "EtcdCluster", Kind: "Service", Want: o.build(ec), Repair: repair,
	})
}

// repair copies the owned fields of want into cur and reports whether
// anything changed.
func repair(cur, want *corev1.Service) bool {
	changed := component.MergeLabels(cur, want.Labels)
	if !maps.Equal(cur.Spec.Selector, want.Spec.Selector) {
		cur.Spec.Selector = want.Spec.Selector
		changed = true
	}
	if cur.Spec.PublishNotReadyAddresses != want.Spec.PublishNotReadyAddresses {
		cur.Spec.PublishNotReadyAddresses = want.Spec.PublishNotReadyAddresses
		changed = true
	}
	if !portsEqual(cur.Spec.Ports, want.Spec.Ports) {
		// A merge patch replaces the list whole, so a stray port goes too.
		cur.Spec.Ports = want.Spec.Ports
		changed = true
	}
	return changed
}

// portsEqual compares what the operator sets, so that fields the apiserver
// fills in (nodePort, appProtocol) do not count as drift.
func portsEqual(a, b []corev1.ServicePort) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Port != b[i].Port ||
			a[i].TargetPort != b[i].TargetPort || a[i].Protocol != b[i].Protocol {
			return false
		}
	}
	return true
}
