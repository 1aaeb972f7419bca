package v1alpha1_test

import (
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

var _ = Describe("EtcdCluster defaults", func() {
	ctx := context.Background()

	It("defaults replicas, storage and progressDeadlineSeconds when they are left out", func() {
		name := uniqueName("ec-min")
		Expect(createUnstructured(map[string]any{
			"apiVersion": "etcd.etcdfleet.io/v1alpha1", "kind": "EtcdCluster",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":     map[string]any{"version": "3.6.16"},
		})).To(Succeed())

		ec := &v1alpha1.EtcdCluster{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ec)).To(Succeed())
		Expect(ec.Spec.Replicas).To(HaveValue(Equal(v1alpha1.DefaultReplicas)))
		Expect(*ec.Spec.Replicas).To(BeEquivalentTo(3))
		Expect(ec.Spec.Storage.Size.Equal(resource.MustParse(v1alpha1.DefaultStorageSize))).To(BeTrue(),
			"size is %s", ec.Spec.Storage.Size.String())
		Expect(ec.Spec.Storage.Size.String()).To(Equal("1Gi"))
		Expect(ec.Spec.Storage.Medium).To(Equal(v1alpha1.StorageMediumDefault))
		Expect(ec.Spec.Storage.StorageClassName).To(BeNil())
		Expect(ec.Spec.ProgressDeadlineSeconds).To(Equal(v1alpha1.DefaultProgressDeadlineSeconds))
		Expect(ec.Spec.TLS).To(BeNil())
	})

	It("stores medium \"\" explicitly, so the immutability rule has an old value to compare", func() {
		name := uniqueName("ec-raw")
		Expect(createUnstructured(map[string]any{
			"apiVersion": "etcd.etcdfleet.io/v1alpha1", "kind": "EtcdCluster",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":     map[string]any{"version": "3.6.16", "storage": map[string]any{"size": "2Gi"}},
		})).To(Succeed())
		raw, err := clientset.Discovery().RESTClient().Get().
			AbsPath("/apis/etcd.etcdfleet.io/v1alpha1/namespaces", ns, "etcdclusters", name).DoRaw(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).To(ContainSubstring(`"medium":""`))
	})

	It("keeps a Go zero storage.size from silently becoming 0: Go clients must set it", func() {
		ec := newCluster(func(ec *v1alpha1.EtcdCluster) { ec.Spec.Storage = v1alpha1.StorageSpec{} })
		expectInvalid(k8sClient.Create(ctx, ec), msgSizePositive)
	})
})

var _ = Describe("EtcdCluster schema", func() {
	ctx := context.Background()

	DescribeTable("rejects invalid fields",
		func(mutate func(*v1alpha1.EtcdCluster), msg string) {
			expectInvalid(k8sClient.Create(ctx, newCluster(mutate)), msg)
		},
		Entry("a version with a v", func(ec *v1alpha1.EtcdCluster) { ec.Spec.Version = "v3.6.16" },
			`spec.version: Unsupported value: "v3.6.16"`),
		Entry("a two-part version", func(ec *v1alpha1.EtcdCluster) { ec.Spec.Version = "3.6" },
			`spec.version: Unsupported value: "3.6"`),
		// Old etcd images ship /bin/sh: the admission policy refuses them,
		// so the cluster is refused here, where the user sees why.
		Entry("an old version", func(ec *v1alpha1.EtcdCluster) { ec.Spec.Version = "3.4.13" },
			`spec.version: Unsupported value: "3.4.13": supported values: "3.6.14", "3.6.15", "3.6.16", "3.7.1", "3.7.2", "3.7.3"`),
		Entry("a patch release etcdfleet does not list", func(ec *v1alpha1.EtcdCluster) { ec.Spec.Version = "3.6.4" },
			`spec.version: Unsupported value: "3.6.4"`),
		Entry("negative replicas", replicas(-1),
			"spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0"),
		Entry("an unknown medium", func(ec *v1alpha1.EtcdCluster) { ec.Spec.Storage.Medium = "Disk" },
			`spec.storage.medium: Unsupported value: "Disk"`),
		Entry("a negative progress deadline", func(ec *v1alpha1.EtcdCluster) { ec.Spec.ProgressDeadlineSeconds = -1 },
			"spec.progressDeadlineSeconds in body should be greater than or equal to 1"),
		Entry("negative quotaBackendBytes", func(ec *v1alpha1.EtcdCluster) {
			ec.Spec.Options = &v1alpha1.EtcdOptions{QuotaBackendBytes: ptr.To[int64](-1)}
		}, "spec.options.quotaBackendBytes in body should be greater than or equal to 0"),
		Entry("snapshotCount 0", func(ec *v1alpha1.EtcdCluster) {
			ec.Spec.Options = &v1alpha1.EtcdOptions{SnapshotCount: ptr.To[int64](0)}
		}, "spec.options.snapshotCount in body should be greater than or equal to 1"),
		Entry("an unknown compaction mode", func(ec *v1alpha1.EtcdCluster) {
			ec.Spec.Options = &v1alpha1.EtcdOptions{AutoCompactionMode: "hourly"}
		}, `spec.options.autoCompactionMode: Unsupported value: "hourly"`),
		Entry("a retention that is neither a duration nor an integer", func(ec *v1alpha1.EtcdCluster) {
			ec.Spec.Options = &v1alpha1.EtcdOptions{AutoCompactionRetention: "1 hour"}
		}, `spec.options.autoCompactionRetention: Invalid value: "1 hour"`),
	)

	DescribeTable("accepts valid options",
		func(opts v1alpha1.EtcdOptions) {
			Expect(k8sClient.Create(ctx, newCluster(func(ec *v1alpha1.EtcdCluster) { ec.Spec.Options = &opts }))).To(Succeed())
		},
		Entry("periodic with a duration", v1alpha1.EtcdOptions{AutoCompactionMode: v1alpha1.AutoCompactionPeriodic, AutoCompactionRetention: "1h30m"}),
		Entry("periodic with a fractional duration", v1alpha1.EtcdOptions{AutoCompactionMode: v1alpha1.AutoCompactionPeriodic, AutoCompactionRetention: "0.5h"}),
		Entry("revision with an integer", v1alpha1.EtcdOptions{AutoCompactionMode: v1alpha1.AutoCompactionRevision, AutoCompactionRetention: "1000"}),
		Entry("quota 0 and snapshotCount 1", v1alpha1.EtcdOptions{QuotaBackendBytes: ptr.To[int64](0), SnapshotCount: ptr.To[int64](1)}),
	)

	It("keys status.members by name and validates the role", func() {
		ec := newCluster()
		Expect(k8sClient.Create(ctx, ec)).To(Succeed())
		ec.Status.Members = []v1alpha1.EtcdClusterMemberStatus{
			{Name: "a", ID: "8e9e05c52164694d", Role: v1alpha1.MemberRoleVoter, Ready: true},
			{Name: "a", Role: v1alpha1.MemberRoleLearner},
		}
		expectInvalid(k8sClient.Status().Update(ctx, ec), `status.members[1]: Duplicate value: {"name":"a"}`)
		ec.Status.Members = []v1alpha1.EtcdClusterMemberStatus{{Name: "a", Role: "Leader"}}
		expectInvalid(k8sClient.Status().Update(ctx, ec), `status.members[0].role: Unsupported value: "Leader"`)
	})
})

var _ = Describe("EtcdCluster scale subresource and printer columns", func() {
	ctx := context.Background()

	It("serves /scale from spec.replicas, status.readyMembers and status.selector", func() {
		ec := newCluster()
		Expect(k8sClient.Create(ctx, ec)).To(Succeed())

		scale := &autoscalingv1.Scale{}
		Expect(k8sClient.SubResource("scale").Get(ctx, ec, scale)).To(Succeed())
		Expect(scale.Spec.Replicas).To(BeEquivalentTo(3))
		Expect(scale.Status.Replicas).To(BeEquivalentTo(0))

		ec.Status.ReadyMembers = 2
		ec.Status.Replicas = 3
		ec.Status.Selector = v1alpha1.ClusterSelector(ec.Name)
		Expect(k8sClient.Status().Update(ctx, ec)).To(Succeed())
		Expect(k8sClient.SubResource("scale").Get(ctx, ec, scale)).To(Succeed())
		Expect(scale.Status.Replicas).To(BeEquivalentTo(2))
		Expect(scale.Status.Selector).To(Equal("etcd.etcdfleet.io/cluster=" + ec.Name))

		scale.Spec.Replicas = 5
		Expect(k8sClient.SubResource("scale").Update(ctx, ec, client.WithSubResourceBody(scale))).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ec), ec)).To(Succeed())
		Expect(ec.Spec.Replicas).To(HaveValue(BeEquivalentTo(5)))
	})

	It("applies the CEL rules to a scale through /scale", func() {
		ec := newCluster(memory("256Mi"))
		Expect(k8sClient.Create(ctx, ec)).To(Succeed())
		scale := &autoscalingv1.Scale{}
		Expect(k8sClient.SubResource("scale").Get(ctx, ec, scale)).To(Succeed())
		scale.Spec.Replicas = 0
		expectInvalid(k8sClient.SubResource("scale").Update(ctx, ec, client.WithSubResourceBody(scale)), msgMemoryPaused)
	})

	It("prints Version, Running, Drifted, UpgradeBlocked (wide), Replicas, Ready, Available, Reason, Age", func() {
		ec := newCluster(replicas(5))
		Expect(k8sClient.Create(ctx, ec)).To(Succeed())
		ec.Status.ReadyMembers = 4
		ec.Status.Versions = []v1alpha1.EtcdClusterVersionCount{{Version: "3.6.14", Members: 1}, {Version: "3.6.16", Members: 4}}
		ec.Status.Conditions = []metav1.Condition{
			{Type: v1alpha1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonQuorumAvailable,
				LastTransitionTime: metav1.Now()},
			{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonMembersUnhealthy,
				LastTransitionTime: metav1.Now()},
			{Type: v1alpha1.ConditionVersionDrifted, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonVersionMismatch,
				LastTransitionTime: metav1.Now()},
			{Type: v1alpha1.ConditionUpgradeBlocked, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonUpgradePathAllowed,
				LastTransitionTime: metav1.Now()},
		}
		Expect(k8sClient.Status().Update(ctx, ec)).To(Succeed())

		row := tableRow("/apis/etcd.etcdfleet.io/v1alpha1/namespaces/" + ns + "/etcdclusters/" + ec.Name)
		Expect(row).To(HaveKeyWithValue("Name", ec.Name))
		Expect(row).To(HaveKeyWithValue("Version", "3.6.16"))
		Expect(row).To(HaveKeyWithValue("Running", "3.6.14"), "the oldest version that runs")
		Expect(row).To(HaveKeyWithValue("Drifted", "True"))
		Expect(row).To(HaveKeyWithValue("UpgradeBlocked", "False"))
		Expect(row).To(HaveKeyWithValue("Replicas", BeNumerically("==", 5)))
		Expect(row).To(HaveKeyWithValue("Ready", BeNumerically("==", 4)))
		Expect(row).To(HaveKeyWithValue("Available", "True"))
		Expect(row).To(HaveKeyWithValue("Reason", v1alpha1.ReasonQuorumAvailable))
		Expect(row).To(HaveKey("Age"))
	})
})

var _ = Describe("config/samples", func() {
	ctx := context.Background()

	DescribeTable("are accepted by the apiserver",
		func(file string, medium v1alpha1.StorageMedium) {
			data, err := os.ReadFile(filepath.Join("..", "..", "..", "config", "samples", file))
			Expect(err).NotTo(HaveOccurred())
			ec := &v1alpha1.EtcdCluster{}
			Expect(yaml.UnmarshalStrict(data, ec)).To(Succeed())
			Expect(ec.GetObjectKind().GroupVersionKind().GroupVersion()).To(Equal(v1alpha1.SchemeGroupVersion))
			ec.Namespace = ns
			Expect(k8sClient.Create(ctx, ec)).To(Succeed())
			Expect(ec.Spec.Replicas).To(HaveValue(BeEquivalentTo(3)))
			Expect(ec.Spec.Storage.Medium).To(Equal(medium))
		},
		Entry("the PVC cluster", "etcd_v1alpha1_etcdcluster.yaml", v1alpha1.StorageMediumDefault),
		Entry("the memory-backed cluster", "etcd_v1alpha1_etcdcluster_memory.yaml", v1alpha1.StorageMediumMemory),
	)
})
