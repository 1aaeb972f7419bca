package v1alpha1_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

const (
	msgClusterNameImmutable = "clusterName is immutable"
	msgTokenImmutable       = "clusterToken is immutable"
	msgInitialClusterSet    = "initialCluster may not change once set"
)

func newMember(mutate ...func(*v1alpha1.EtcdMember)) *v1alpha1.EtcdMember {
	em := &v1alpha1.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{Name: uniqueName("em"), Namespace: ns},
		Spec: v1alpha1.EtcdMemberSpec{
			ClusterName:  "example",
			Version:      "3.6.16",
			Storage:      v1alpha1.StorageSpec{Size: resource.MustParse("1Gi")},
			ClusterToken: ns + "-example-uid",
		},
	}
	for _, m := range mutate {
		m(em)
	}
	return em
}

func updateMember(em *v1alpha1.EtcdMember, mutate func(*v1alpha1.EtcdMember)) error {
	GinkgoHelper()
	ctx := context.Background()
	cur := &v1alpha1.EtcdMember{}
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(em), cur)).To(Succeed())
	mutate(cur)
	return k8sClient.Update(ctx, cur)
}

var _ = Describe("EtcdMember", func() {
	ctx := context.Background()

	create := func(mutate ...func(*v1alpha1.EtcdMember)) *v1alpha1.EtcdMember {
		GinkgoHelper()
		em := newMember(mutate...)
		Expect(k8sClient.Create(ctx, em)).To(Succeed())
		return em
	}

	It("requires clusterName and a well-formed version", func() {
		expectInvalid(k8sClient.Create(ctx, newMember(func(em *v1alpha1.EtcdMember) { em.Spec.ClusterName = "" })),
			"spec.clusterName in body should be at least 1 chars long")
		expectInvalid(k8sClient.Create(ctx, newMember(func(em *v1alpha1.EtcdMember) { em.Spec.Version = "latest" })),
			`spec.version: Invalid value: "latest"`)
	})

	It("defaults storage when it is left out", func() {
		name := uniqueName("em-min")
		Expect(createUnstructured(map[string]any{
			"apiVersion": "etcd.etcdfleet.io/v1alpha1", "kind": "EtcdMember",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":     map[string]any{"clusterName": "example", "version": "3.6.16"},
		})).To(Succeed())
		em := &v1alpha1.EtcdMember{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, em)).To(Succeed())
		Expect(em.Spec.Storage.Size.String()).To(Equal("1Gi"))
		Expect(em.Spec.Storage.Medium).To(Equal(v1alpha1.StorageMediumDefault))
	})

	It("keeps clusterName immutable", func() {
		em := create()
		expectInvalid(updateMember(em, func(em *v1alpha1.EtcdMember) { em.Spec.ClusterName = "other" }),
			msgClusterNameImmutable)
	})

	It("keeps clusterToken immutable, including set and unset", func() {
		em := create()
		expectInvalid(updateMember(em, func(em *v1alpha1.EtcdMember) { em.Spec.ClusterToken = "other" }), msgTokenImmutable)
		expectInvalid(updateMember(em, func(em *v1alpha1.EtcdMember) { em.Spec.ClusterToken = "" }), msgTokenImmutable)
		none := create(func(em *v1alpha1.EtcdMember) { em.Spec.ClusterToken = "" })
		expectInvalid(updateMember(none, func(em *v1alpha1.EtcdMember) { em.Spec.ClusterToken = "late" }), msgTokenImmutable)
	})

	It("lets initialCluster be set once, then never changed or cleared", func() {
		em := create()
		Expect(updateMember(em, func(em *v1alpha1.EtcdMember) {
			em.Spec.InitialCluster = em.Name + "=https://" + em.Name + ".example:2380"
		})).To(Succeed())
		expectInvalid(updateMember(em, func(em *v1alpha1.EtcdMember) { em.Spec.InitialCluster = "x=https://x:2380" }),
			msgInitialClusterSet)
		expectInvalid(updateMember(em, func(em *v1alpha1.EtcdMember) { em.Spec.InitialCluster = "" }),
			msgInitialClusterSet)
		// The controllers still toggle dormant and may re-copy other fields.
		Expect(updateMember(em, func(em *v1alpha1.EtcdMember) { em.Spec.Dormant = true })).To(Succeed())
	})

	It("round-trips the replacement status and prints it", func() {
		em := create(func(em *v1alpha1.EtcdMember) {
			em.Spec.TLS = &v1alpha1.MemberTLS{ClientServerSecretRef: "srv", ClientMTLS: true,
				OperatorClientSecretRef: "op", PeerSecretRef: "peer"}
		})
		now := metav1.NewTime(time.Now().Truncate(time.Second))
		later := metav1.NewTime(now.Add(time.Minute))
		em.Status = v1alpha1.EtcdMemberStatus{
			MemberID: "8e9e05c52164694d", PodName: em.Name, PodUID: "pod-uid-2", PVCName: "data-" + em.Name,
			IsVoter: true, Version: "3.6.16", ObservedGeneration: em.Generation,
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
				Reason: v1alpha1.ReasonPodReplacing, Message: "pod phase: Failed", LastTransitionTime: now}},
			Replacement: &v1alpha1.ReplacementStatus{
				Total: 4, CappedCount: 2, WindowStart: &now, Consecutive: 3, LastTime: &now,
				LastReason: "Terminated", LastPhase: "Failed", LastPodUID: "pod-uid-1",
				NotBefore: &later, HealthySince: &now, ReplaceNowHandled: "2026-01-01T00:00:00Z",
			},
		}
		want := em.Status.DeepCopy()
		Expect(k8sClient.Status().Update(ctx, em)).To(Succeed())
		got := &v1alpha1.EtcdMember{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(em), got)).To(Succeed())
		Expect(got.Status.Replacement).To(Equal(want.Replacement))
		Expect(got.Status.PodUID).To(Equal(want.PodUID))
		Expect(got.Spec.TLS).To(Equal(em.Spec.TLS))

		row := tableRow("/apis/etcd.etcdfleet.io/v1alpha1/namespaces/" + ns + "/etcdmembers/" + em.Name)
		Expect(row).To(HaveKeyWithValue("Cluster", "example"))
		Expect(row).To(HaveKeyWithValue("Version", "3.6.16"))
		Expect(row).To(HaveKeyWithValue("Member ID", "8e9e05c52164694d"))
		Expect(row).To(HaveKeyWithValue("Voter", true))
		Expect(row).To(HaveKeyWithValue("Ready", "False"))
		Expect(row).To(HaveKeyWithValue("Reason", v1alpha1.ReasonPodReplacing))
		Expect(row).To(HaveKeyWithValue("Replacements", BeNumerically("==", 4)))
		Expect(row).To(HaveKey("Age"))
	})

	It("ignores status written through the main resource (status subresource)", func() {
		em := create()
		em.Status.MemberID = "abc"
		Expect(k8sClient.Update(ctx, em)).To(Succeed())
		Expect(em.Status.MemberID).To(BeEmpty())
	})
})
