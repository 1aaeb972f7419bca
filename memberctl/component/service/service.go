package service

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

// Build returns the headless and the client Service of ec, without ownerRefs.
func Build(ec *v1alpha1.EtcdCluster) (headless, clientSvc *corev1.Service) {
	headless = base(ec, etcd.HeadlessService(ec.Name))
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	headless.Spec.PublishNotReadyAddresses = true
	headless.Spec.Ports = []corev1.ServicePort{
		port(component.ClientPortName, etcd.ClientPort),
		port(component.PeerPortName, etcd.PeerPort),
	}

	clientSvc = base(ec, etcd.ClientService(ec.Name))
	clientSvc.Spec.Ports = []corev1.ServicePort{port(component.ClientPortName, etcd.ClientPort)}
	return headless, clientSvc
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

// Sync ensures both Services of ec exist and match in the fields the
// operator owns.
func Sync(ctx context.Context, c client.Client, ec *v1alpha1.EtcdCluster) error {
	headless, clientSvc := Build(ec)
	for _, want := range []*corev1.Service{headless, clientSvc} {
		if err := syncOne(ctx, c, ec, want); err != nil {
			return err
		}
	}
	return nil
}

func syncOne(ctx context.Context, c client.Client, ec *v1alpha1.EtcdCluster, want *corev1.Service) error {
	cur := &corev1.Service{}
	err := c.Get(ctx, client.ObjectKeyFromObject(want), cur)
	if apierrors.IsNotFound(err) {
		if err := controllerutil.SetControllerReference(ec, want, c.Scheme()); err != nil {
			return fmt.Errorf("set owner of Service %s: %w", want.Name, err)
		}
		if err := c.Create(ctx, want); err != nil {
			return fmt.Errorf("create Service %s: %w", want.Name, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("get Service %s: %w", want.Name, err)
	}
	if !component.ControlledBy(cur, ec.UID) {
		return &component.ForeignError{Kind: "Service", Name: cur.Name, OwnerKind: "EtcdCluster", Owner: ec.Name}
	}

	before := cur.DeepCopy()
	if !repair(cur, want) {
		return nil
	}
	if err := c.Patch(ctx, cur, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("patch Service %s: %w", cur.Name, err)
	}
	return nil
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
