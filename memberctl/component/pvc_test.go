package component_test

import (
	"errors"
	"maps"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component"
	"github.com/etcdfleet/etcdfleet/memberctl/component/pvc"
)

var _ = Describe("pvc.Syncer", func() {
	var ns string
	BeforeEach(func(ctx SpecContext) {
		var err error
		ns, err = env.Namespace(ctx)
		Expect(err).NotTo(HaveOccurred())
	})

	get := func(ctx SpecContext, name string) *corev1.PersistentVolumeClaim {
		GinkgoHelper()
		got := &corev1.PersistentVolumeClaim{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got)).To(Succeed())
		return got
	}

	It("creates data-<member> owned by the member, then leaves it alone", func(ctx SpecContext) {
		m, err := env.Member(ctx, ns, "c1", "m1", func(m *v1alpha1.EtcdMember) {
			m.Spec.Storage.Size = resource.MustParse("3Gi")
			m.Spec.Storage.StorageClassName = ptr.To("fast")
		})
		Expect(err).NotTo(HaveOccurred())

		ret, err := pvc.New(k8s).Sync(ctx, m)
		Expect(err).NotTo(HaveOccurred())
		got := get(ctx, "data-m1")
		Expect(ret.UID).To(Equal(got.UID))
		Expect(got.Spec.AccessModes).To(Equal([]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}))
		Expect(got.Spec.StorageClassName).To(Equal(ptr.To("fast")))
		Expect(got.Spec.Resources.Requests.Storage().Cmp(resource.MustParse("3Gi"))).To(BeZero())
		Expect(maps.Equal(got.Labels, v1alpha1.MemberLabels("c1", "m1"))).To(BeTrue(), "labels %v", got.Labels)
		owner := metav1.GetControllerOf(got)
		Expect(owner).NotTo(BeNil())
		Expect(owner.UID).To(Equal(m.UID))
		Expect(owner.Kind).To(Equal("EtcdMember"))

		counting, writes := env.CountingClient()
		again, err := pvc.New(counting).Sync(ctx, m)
		Expect(err).NotTo(HaveOccurred())
		Expect(writes.Load()).To(BeZero())
		Expect(again.ResourceVersion).To(Equal(got.ResourceVersion))
	})

	DescribeTable("refuses a claim the member does not control and leaves it untouched",
		func(ctx SpecContext, owners []metav1.OwnerReference) {
			m, err := env.Member(ctx, ns, "c1", "m1")
			Expect(err).NotTo(HaveOccurred())
			foreign := &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "data-m1", Namespace: ns, OwnerReferences: owners,
					Labels: map[string]string{"keep": "me"}},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}
			Expect(k8s.Create(ctx, foreign)).To(Succeed())

			ret, err := pvc.New(k8s).Sync(ctx, m)
			Expect(ret).To(BeNil())
			Expect(errors.Is(err, component.ErrForeign)).To(BeTrue(), "got %v", err)
			Expect(err).To(MatchError("PVC data-m1 is not owned by member m1 (awaiting garbage collection)"))
			after := get(ctx, "data-m1")
			Expect(after.ResourceVersion).To(Equal(foreign.ResourceVersion))
			Expect(after.OwnerReferences).To(Equal(foreign.OwnerReferences))
		},
		Entry("left by an earlier member of the same name", []metav1.OwnerReference{StaleOwner("EtcdMember", "m1")}),
		Entry("with no owner at all", nil),
	)

	It("creates nothing for a memory-backed member", func(ctx SpecContext) {
		m, err := env.Member(ctx, ns, "c1", "m1", func(m *v1alpha1.EtcdMember) {
			m.Spec.Storage.Medium = v1alpha1.StorageMediumMemory
		})
		Expect(err).NotTo(HaveOccurred())
		ret, err := pvc.New(k8s).Sync(ctx, m)
		Expect(err).NotTo(HaveOccurred())
		Expect(ret).To(BeNil())
		err = k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-m1"}, &corev1.PersistentVolumeClaim{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "got %v", err)
	})
})
