package component_test

import (
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component"
	"github.com/etcdfleet/etcdfleet/memberctl/component/pod"
)

var _ = Describe("pod.Syncer", func() {
	var ns string
	BeforeEach(func(ctx SpecContext) {
		var err error
		ns, err = env.Namespace(ctx)
		Expect(err).NotTo(HaveOccurred())
	})

	get := func(ctx SpecContext, name string) *corev1.Pod {
		GinkgoHelper()
		got := &corev1.Pod{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got)).To(Succeed())
		return got
	}
	secret := func(ctx SpecContext, name string) {
		GinkgoHelper()
		Expect(k8s.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Data:       map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k"), "ca.crt": []byte("a")},
		})).To(Succeed())
	}
	withTLS := func(m *v1alpha1.EtcdMember) {
		m.Spec.TLS = &v1alpha1.MemberTLS{
			ClientServerSecretRef: "srv", ClientMTLS: true, OperatorClientSecretRef: "op", PeerSecretRef: "peer",
		}
		m.Spec.Options = &v1alpha1.EtcdOptions{SnapshotCount: ptr.To[int64](10000), AutoCompactionMode: "revision"}
	}

	It("refuses to create a Pod while a TLS Secret it mounts is missing, then creates it", func(ctx SpecContext) {
		m, err := env.Member(ctx, ns, "c1", "m1", withTLS)
		Expect(err).NotTo(HaveOccurred())
		secret(ctx, "srv")

		_, err = pod.New(k8s, pod.BuildOptions{}).Sync(ctx, m)
		Expect(errors.Is(err, pod.ErrMissingSecret)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("TLS Secret " + ns + "/peer"))
		err = k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "m1"}, &corev1.Pod{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no Pod may be created: %v", err)

		// The full spec (TLS volumes, options, probes, security) must pass
		// the apiserver's Pod validation.
		secret(ctx, "peer")
		ret, err := pod.New(k8s, pod.BuildOptions{}).Sync(ctx, m)
		Expect(err).NotTo(HaveOccurred())
		got := get(ctx, "m1")
		Expect(ret.UID).To(Equal(got.UID))
		Expect(pod.OwnedBy(got, m.UID)).To(BeTrue())
		Expect(metav1.GetControllerOf(got).BlockOwnerDeletion).To(Equal(ptr.To(true)))
		Expect(got.Spec.Containers[0].Command).To(Equal(pod.Build(m, pod.BuildOptions{}).Spec.Containers[0].Command))
		Expect(got.Spec.Volumes).To(HaveLen(3))
	})

	It("keeps the role label in step with isVoter and touches nothing else", func(ctx SpecContext) {
		m, err := env.Member(ctx, ns, "c1", "m1")
		Expect(err).NotTo(HaveOccurred())
		_, err = pod.New(k8s, pod.BuildOptions{}).Sync(ctx, m)
		Expect(err).NotTo(HaveOccurred())
		created := get(ctx, "m1")
		Expect(created.Labels).NotTo(HaveKey(v1alpha1.LabelRole))

		// Somebody else's label must survive the role patches.
		p := created.DeepCopy()
		p.Labels["team"] = "storage"
		Expect(k8s.Patch(ctx, p, client.MergeFrom(created))).To(Succeed())

		m.Status.IsVoter = true
		_, err = pod.New(k8s, pod.BuildOptions{}).Sync(ctx, m)
		Expect(err).NotTo(HaveOccurred())
		voter := get(ctx, "m1")
		Expect(voter.Labels).To(HaveKeyWithValue(v1alpha1.LabelRole, v1alpha1.RoleVoter))
		Expect(voter.Labels).To(HaveKeyWithValue("team", "storage"))
		Expect(voter.Spec).To(Equal(created.Spec))

		counting, writes := env.CountingClient()
		_, err = pod.New(counting, pod.BuildOptions{}).Sync(ctx, m)
		Expect(err).NotTo(HaveOccurred())
		Expect(writes.Load()).To(BeZero(), "no write request when the label is right")
		Expect(get(ctx, "m1").ResourceVersion).To(Equal(voter.ResourceVersion))

		m.Status.IsVoter = false
		_, err = pod.New(k8s, pod.BuildOptions{}).Sync(ctx, m)
		Expect(err).NotTo(HaveOccurred())
		learner := get(ctx, "m1")
		Expect(learner.Labels).NotTo(HaveKey(v1alpha1.LabelRole))
		Expect(learner.Labels).To(HaveKeyWithValue("team", "storage"))
	})

	It("returns a terminal Pod as it is rather than recreating it", func(ctx SpecContext) {
		m, err := env.Member(ctx, ns, "c1", "m1")
		Expect(err).NotTo(HaveOccurred())
		_, err = pod.New(k8s, pod.BuildOptions{}).Sync(ctx, m)
		Expect(err).NotTo(HaveOccurred())
		p := get(ctx, "m1")
		p.Status.Phase = corev1.PodFailed
		p.Status.Reason = "Terminated"
		Expect(k8s.Status().Update(ctx, p)).To(Succeed())

		ret, err := pod.New(k8s, pod.BuildOptions{}).Sync(ctx, m)
		Expect(err).NotTo(HaveOccurred())
		Expect(ret.UID).To(Equal(p.UID))
		Expect(pod.IsTerminal(ret)).To(BeTrue())
		Expect(pod.TerminationReason(ret)).To(Equal("Terminated"))
	})

	DescribeTable("refuses a Pod the member does not control and leaves it untouched",
		func(ctx SpecContext, owners []metav1.OwnerReference) {
			m, err := env.Member(ctx, ns, "c1", "m1")
			Expect(err).NotTo(HaveOccurred())
			foreign := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: ns, OwnerReferences: owners,
					Labels: map[string]string{"old": "pod"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Image: "etcd:old"}}},
			}
			Expect(k8s.Create(ctx, foreign)).To(Succeed())

			m.Status.IsVoter = true // would add the role label to its own Pod
			ret, err := pod.New(k8s, pod.BuildOptions{}).Sync(ctx, m)
			Expect(ret).To(BeNil())
			Expect(errors.Is(err, component.ErrForeign)).To(BeTrue(), "got %v", err)
			Expect(err).To(MatchError("Pod m1 is not owned by member m1 (awaiting garbage collection)"))
			after := get(ctx, "m1")
			Expect(after.ResourceVersion).To(Equal(foreign.ResourceVersion))
			Expect(after.Labels).NotTo(HaveKey(v1alpha1.LabelRole))
		},
		Entry("left by an earlier member of the same name", []metav1.OwnerReference{StaleOwner("EtcdMember", "m1")}),
		Entry("with no owner at all", nil),
	)
})
