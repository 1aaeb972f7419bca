package v1alpha1_test

import (
	"context"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// Literal messages of the EtcdDefrag and spec.defrag CEL rules.
const (
	msgDefragImmutable = "spec is immutable"
	msgMinFreeBytes    = "minFreeBytes must be greater than 0"
	msgOneSchedule     = "exactly one of cron and interval must be set"
)

func newDefrag(t v1alpha1.DefragThresholds) *v1alpha1.EtcdDefrag {
	return &v1alpha1.EtcdDefrag{
		ObjectMeta: metav1.ObjectMeta{Name: uniqueName("defrag"), Namespace: ns},
		Spec:       v1alpha1.EtcdDefragSpec{ClusterRef: corev1.LocalObjectReference{Name: "main"}, DefragThresholds: t},
	}
}

func withDefrag(s *v1alpha1.DefragScheduleSpec) func(*v1alpha1.EtcdCluster) {
	return func(ec *v1alpha1.EtcdCluster) { ec.Spec.Defrag = s }
}

var _ = Describe("EtcdDefrag validation", func() {
	ctx := context.Background()

	It("admits no thresholds, either threshold, or both", func() {
		q := resource.MustParse("64Mi")
		for _, t := range []v1alpha1.DefragThresholds{{}, {MinFragmentationPercent: ptr.To[int32](20)}, {MinFreeBytes: &q},
			{MinFragmentationPercent: ptr.To[int32](1), MinFreeBytes: &q}} {
			Expect(k8sClient.Create(ctx, newDefrag(t))).To(Succeed())
		}
	})

	It("bounds minFragmentationPercent to 1..99", func() {
		expectInvalid(k8sClient.Create(ctx, newDefrag(v1alpha1.DefragThresholds{MinFragmentationPercent: ptr.To[int32](0)})), "spec.minFragmentationPercent")
		expectInvalid(k8sClient.Create(ctx, newDefrag(v1alpha1.DefragThresholds{MinFragmentationPercent: ptr.To[int32](100)})), "spec.minFragmentationPercent")
	})

	It("wants a positive minFreeBytes", func() {
		zero := resource.MustParse("0")
		expectInvalid(k8sClient.Create(ctx, newDefrag(v1alpha1.DefragThresholds{MinFreeBytes: &zero})), msgMinFreeBytes)
	})

	It("makes the spec immutable but lets the status change, with per-member results", func() {
		d := newDefrag(v1alpha1.DefragThresholds{MinFragmentationPercent: ptr.To[int32](20)})
		Expect(k8sClient.Create(ctx, d)).To(Succeed())
		d.Spec.MinFragmentationPercent = ptr.To[int32](30)
		expectInvalid(k8sClient.Update(ctx, d), msgDefragImmutable)

		cur := &v1alpha1.EtcdDefrag{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(d), cur)).To(Succeed())
		cur.Status.Phase = v1alpha1.DefragRunning
		cur.Status.Members = []v1alpha1.DefragMemberResult{{Member: "main-a", MemberID: "0123456789abcdef", Role: v1alpha1.DefragRoleFollower,
			DBSizeBefore: 100, DBSizeInUseBefore: 10, DBSizeAfter: 12, Outcome: v1alpha1.DefragOutcomeDefragmented, Time: metav1.Now()}}
		Expect(k8sClient.Status().Update(ctx, cur)).To(Succeed())
		cur.Status.Members[0].Outcome = "Maybe"
		expectInvalid(k8sClient.Status().Update(ctx, cur), "outcome")
	})
})

var _ = Describe("EtcdDefrag sample and printer columns", func() {
	ctx := context.Background()

	It("accepts config/samples/etcd_v1alpha1_etcddefrag.yaml", func() {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "config", "samples", "etcd_v1alpha1_etcddefrag.yaml"))
		Expect(err).NotTo(HaveOccurred())
		d := &v1alpha1.EtcdDefrag{}
		Expect(yaml.UnmarshalStrict(data, d)).To(Succeed())
		d.Namespace = ns
		Expect(k8sClient.Create(ctx, d)).To(Succeed())
		Expect(d.Spec.MinFreeBytes.String()).To(Equal("64Mi"))
	})

	It("prints the cluster, phase and members defragmented", func() {
		d := newDefrag(v1alpha1.DefragThresholds{})
		Expect(k8sClient.Create(ctx, d)).To(Succeed())
		d.Status = v1alpha1.EtcdDefragStatus{Phase: v1alpha1.DefragComplete, Defragmented: 2, ReclaimedBytes: 4096}
		Expect(k8sClient.Status().Update(ctx, d)).To(Succeed())
		row := tableRow("/apis/etcd.etcdfleet.io/v1alpha1/namespaces/" + ns + "/etcddefrags/" + d.Name)
		Expect(row).To(HaveKeyWithValue("Cluster", "main"))
		Expect(row).To(HaveKeyWithValue("Phase", "Complete"))
		Expect(row).To(HaveKeyWithValue("Defragmented", BeEquivalentTo(2)))
		Expect(row).To(HaveKeyWithValue("Reclaimed", BeEquivalentTo(4096)))
	})
})

var _ = Describe("EtcdCluster spec.defrag validation", func() {
	ctx := context.Background()

	It("admits a cron or an interval schedule and defaults historyLimit", func() {
		ec := newCluster(withDefrag(&v1alpha1.DefragScheduleSpec{Cron: "30 3 * * 0"}))
		Expect(k8sClient.Create(ctx, ec)).To(Succeed())
		Expect(ec.Spec.Defrag.HistoryLimit).To(BeEquivalentTo(3))
		Expect(k8sClient.Create(ctx, newCluster(withDefrag(&v1alpha1.DefragScheduleSpec{
			Interval: &metav1.Duration{Duration: 168 * time.Hour}, HistoryLimit: 5,
			DefragThresholds: v1alpha1.DefragThresholds{MinFragmentationPercent: ptr.To[int32](30)}})))).To(Succeed())
	})

	It("wants exactly one of cron and interval", func() {
		expectInvalid(k8sClient.Create(ctx, newCluster(withDefrag(&v1alpha1.DefragScheduleSpec{}))), msgOneSchedule)
		expectInvalid(k8sClient.Create(ctx, newCluster(withDefrag(&v1alpha1.DefragScheduleSpec{Cron: "30 3 * * 0",
			Interval: &metav1.Duration{Duration: time.Hour}}))), msgOneSchedule)
	})

	It("checks the schedule's thresholds like an EtcdDefrag's", func() {
		zero := resource.MustParse("0")
		expectInvalid(k8sClient.Create(ctx, newCluster(withDefrag(&v1alpha1.DefragScheduleSpec{Cron: "30 3 * * 0",
			DefragThresholds: v1alpha1.DefragThresholds{MinFreeBytes: &zero}}))), msgMinFreeBytes)
	})

	It("lets the schedule be added, changed and removed", func() {
		ec := newCluster()
		Expect(k8sClient.Create(ctx, ec)).To(Succeed())
		Expect(updateCluster(ec, withDefrag(&v1alpha1.DefragScheduleSpec{Cron: "30 3 * * 0"}))).To(Succeed())
		Expect(updateCluster(ec, withDefrag(&v1alpha1.DefragScheduleSpec{Interval: &metav1.Duration{Duration: time.Hour}}))).To(Succeed())
		Expect(updateCluster(ec, withDefrag(nil))).To(Succeed())
	})
})
