package component_test

import (
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component"
	"github.com/etcdfleet/etcdfleet/memberctl/component/service"
)

var _ = Describe("service.Syncers", func() {
	var (
		ns string
		ec *v1alpha1.EtcdCluster
	)
	BeforeEach(func(ctx SpecContext) {
		var err error
		ns, err = env.Namespace(ctx)
		Expect(err).NotTo(HaveOccurred())
		ec, err = env.Cluster(ctx, ns, "c1")
		Expect(err).NotTo(HaveOccurred())
	})

	// syncBoth runs the Syncers of both Services, as the cluster reconciler does.
	syncBoth := func(ctx SpecContext, c client.Client) error {
		for _, op := range service.Syncers(c) {
			if _, err := op.Sync(ctx, ec); err != nil {
				return err
			}
		}
		return nil
	}
	get := func(ctx SpecContext, name string) *corev1.Service {
		GinkgoHelper()
		got := &corev1.Service{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got)).To(Succeed())
		return got
	}
	type port struct {
		Name   string
		Port   int32
		Target int
	}
	ports := func(s *corev1.Service) []port {
		var out []port
		for _, p := range s.Spec.Ports {
			Expect(p.Protocol).To(Equal(corev1.ProtocolTCP))
			out = append(out, port{p.Name, p.Port, p.TargetPort.IntValue()})
		}
		return out
	}
	selector := map[string]string{v1alpha1.LabelCluster: "c1"}

	expectWanted := func(ctx SpecContext) (headless, clientSvc *corev1.Service) {
		GinkgoHelper()
		headless, clientSvc = get(ctx, "c1"), get(ctx, "c1-client")
		Expect(headless.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
		Expect(headless.Spec.PublishNotReadyAddresses).To(BeTrue())
		Expect(headless.Spec.Selector).To(Equal(selector))
		Expect(ports(headless)).To(Equal([]port{{"client", 2379, 2379}, {"peer", 2380, 2380}}))
		Expect(clientSvc.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
		Expect(clientSvc.Spec.ClusterIP).NotTo(Equal(corev1.ClusterIPNone))
		Expect(clientSvc.Spec.PublishNotReadyAddresses).To(BeFalse())
		Expect(clientSvc.Spec.Selector).To(Equal(selector))
		Expect(ports(clientSvc)).To(Equal([]port{{"client", 2379, 2379}}))
		for _, s := range []*corev1.Service{headless, clientSvc} {
			for k, v := range v1alpha1.ClusterLabels("c1") {
				Expect(s.Labels).To(HaveKeyWithValue(k, v))
			}
			Expect(component.ControlledBy(s, ec.UID)).To(BeTrue(), "%s must be controlled by the cluster", s.Name)
		}
		return headless, clientSvc
	}
	expectNoWrite := func(ctx SpecContext, headless, clientSvc *corev1.Service) {
		GinkgoHelper()
		counting, writes := env.CountingClient()
		Expect(syncBoth(ctx, counting)).To(Succeed())
		Expect(writes.Load()).To(BeZero(), "no write request when nothing differs")
		Expect(get(ctx, "c1").ResourceVersion).To(Equal(headless.ResourceVersion))
		Expect(get(ctx, "c1-client").ResourceVersion).To(Equal(clientSvc.ResourceVersion))
	}

	It("creates the headless and client Services and writes nothing when they match", func(ctx SpecContext) {
		Expect(syncBoth(ctx, k8s)).To(Succeed())
		headless, clientSvc := expectWanted(ctx)
		expectNoWrite(ctx, headless, clientSvc)
	})

	It("repairs drift in the owned fields only", func(ctx SpecContext) {
		Expect(syncBoth(ctx, k8s)).To(Succeed())
		headless, clientSvc := get(ctx, "c1"), get(ctx, "c1-client")

		drifted := headless.DeepCopy()
		drifted.Spec.Selector = map[string]string{"app": "other"}
		drifted.Spec.Ports = drifted.Spec.Ports[:1]
		drifted.Spec.PublishNotReadyAddresses = false
		drifted.Labels[v1alpha1.LabelManagedBy] = "someone-else"
		drifted.Labels["team"] = "storage"
		drifted.Annotations = map[string]string{"note": "kept"}
		Expect(k8s.Update(ctx, drifted)).To(Succeed())

		driftedClient := clientSvc.DeepCopy()
		driftedClient.Spec.PublishNotReadyAddresses = true
		driftedClient.Spec.Ports = append(driftedClient.Spec.Ports,
			corev1.ServicePort{Name: "extra", Port: 9999, TargetPort: intstr.FromInt32(9999), Protocol: corev1.ProtocolTCP})
		driftedClient.Spec.Ports[0].TargetPort = intstr.FromInt32(12379)
		Expect(k8s.Update(ctx, driftedClient)).To(Succeed())

		Expect(syncBoth(ctx, k8s)).To(Succeed())
		headless, clientSvc = expectWanted(ctx)
		Expect(headless.Labels).To(HaveKeyWithValue("team", "storage"))
		Expect(headless.Annotations).To(HaveKeyWithValue("note", "kept"))
		expectNoWrite(ctx, headless, clientSvc)
	})

	It("refuses a Service the cluster does not control and leaves it untouched", func(ctx SpecContext) {
		foreign := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: ns,
				OwnerReferences: []metav1.OwnerReference{StaleOwner("EtcdCluster", "c1")}},
			Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "old"},
				Ports: []corev1.ServicePort{{Name: "client", Port: 2379}}},
		}
		Expect(k8s.Create(ctx, foreign)).To(Succeed())

		err := syncBoth(ctx, k8s)
		Expect(errors.Is(err, component.ErrForeign)).To(BeTrue(), "got %v", err)
		Expect(err).To(MatchError("Service c1 is not owned by EtcdCluster c1 (awaiting garbage collection)"))
		Expect(get(ctx, "c1").ResourceVersion).To(Equal(foreign.ResourceVersion))
	})
})
