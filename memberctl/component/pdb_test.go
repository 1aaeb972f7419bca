package component_test

import (
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component"
	"github.com/etcdfleet/etcdfleet/memberctl/component/pdb"
)

var _ = Describe("pdb.Syncer", func() {
	var (
		ns string
		ec *v1alpha1.EtcdCluster
	)
	BeforeEach(func(ctx SpecContext) {
		var err error
		ns, err = env.Namespace(ctx)
		Expect(err).NotTo(HaveOccurred())
		ec, err = env.Cluster(ctx, ns, "c1") // spec.replicas defaults to 3
		Expect(err).NotTo(HaveOccurred())
	})

	key := func() client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: "c1"} }
	get := func(ctx SpecContext) *policyv1.PodDisruptionBudget {
		GinkgoHelper()
		got := &policyv1.PodDisruptionBudget{}
		Expect(k8s.Get(ctx, key(), got)).To(Succeed())
		return got
	}
	expectMin := func(ctx SpecContext, want int) *policyv1.PodDisruptionBudget {
		GinkgoHelper()
		got := get(ctx)
		Expect(got.Spec.MinAvailable).To(Equal(ptr.To(intstr.FromInt(want))))
		Expect(got.Spec.MaxUnavailable).To(BeNil())
		Expect(got.Spec.Selector.MatchLabels).To(Equal(map[string]string{
			v1alpha1.LabelCluster: "c1", v1alpha1.LabelRole: v1alpha1.RoleVoter}))
		Expect(component.ControlledBy(got, ec.UID)).To(BeTrue())
		return got
	}

	It("sizes minAvailable from voters and replicas, writes only on change, and goes away at 0 voters", func(ctx SpecContext) {
		Expect(pdb.New(k8s, 3).Sync(ctx, ec)).Error().To(Succeed())
		created := expectMin(ctx, 2)
		for k, v := range v1alpha1.ClusterLabels("c1") {
			Expect(created.Labels).To(HaveKeyWithValue(k, v))
		}

		counting, writes := env.CountingClient()
		Expect(pdb.New(counting, 2).Sync(ctx, ec)).Error().To(Succeed(), "2 of 3 voters: still the quorum of 3")
		Expect(writes.Load()).To(BeZero(), "no write request when unchanged")
		Expect(get(ctx).ResourceVersion).To(Equal(created.ResourceVersion))

		Expect(pdb.New(k8s, 5).Sync(ctx, ec)).Error().To(Succeed())
		expectMin(ctx, 3)

		ec.Status.Observed = &v1alpha1.EtcdClusterObservedSpec{Replicas: 7}
		Expect(pdb.New(k8s, 5).Sync(ctx, ec)).Error().To(Succeed())
		expectMin(ctx, 4)

		Expect(pdb.New(k8s, 0).Sync(ctx, ec)).Error().To(Succeed())
		err := k8s.Get(ctx, key(), &policyv1.PodDisruptionBudget{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "got %v", err)
		Expect(pdb.New(k8s, 0).Sync(ctx, ec)).Error().To(Succeed(), "already absent")
	})

	It("migrates a budget written with maxUnavailable", func(ctx SpecContext) {
		old := pdb.Build(ec, 3)
		old.Spec.MinAvailable = nil
		old.Spec.MaxUnavailable = ptr.To(intstr.FromInt(1))
		old.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(),
			Kind: "EtcdCluster", Name: "c1", UID: ec.UID, Controller: ptr.To(true)}}
		Expect(k8s.Create(ctx, old)).To(Succeed())

		Expect(pdb.New(k8s, 3).Sync(ctx, ec)).Error().To(Succeed())
		expectMin(ctx, 2)
	})

	It("refuses a budget the cluster does not control and leaves it untouched", func(ctx SpecContext) {
		foreign := pdb.Build(ec, 1)
		foreign.OwnerReferences = []metav1.OwnerReference{StaleOwner("EtcdCluster", "c1")}
		Expect(k8s.Create(ctx, foreign)).To(Succeed())

		for _, voters := range []int32{3, 0} {
			_, err := pdb.New(k8s, voters).Sync(ctx, ec)
			Expect(errors.Is(err, component.ErrForeign)).To(BeTrue(), "voters=%d: got %v", voters, err)
			Expect(err).To(MatchError("PDB c1 is not owned by EtcdCluster c1 (awaiting garbage collection)"))
			Expect(get(ctx).ResourceVersion).To(Equal(foreign.ResourceVersion))
		}
	})
})
