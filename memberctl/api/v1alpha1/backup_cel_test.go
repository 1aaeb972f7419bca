package v1alpha1_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

func backup(b v1alpha1.BackupSpec) func(*v1alpha1.EtcdCluster) {
	return func(ec *v1alpha1.EtcdCluster) {
		if b.Location.S3 == nil && b.Location.PVC == nil {
			b.Location = *s3At("daily/")
		}
		ec.Spec.Backup = &b
	}
}

func every(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

var _ = Describe("EtcdCluster spec.backup CEL", func() {
	ctx := context.Background()

	It("takes exactly one of cron and interval", func() {
		Expect(k8sClient.Create(ctx, newCluster(backup(v1alpha1.BackupSpec{Cron: "0 */6 * * *"})))).To(Succeed())
		Expect(k8sClient.Create(ctx, newCluster(backup(v1alpha1.BackupSpec{Interval: every(6 * time.Hour)})))).To(Succeed())
		const one = "exactly one of cron and interval must be set"
		expectInvalid(k8sClient.Create(ctx, newCluster(backup(v1alpha1.BackupSpec{}))), one)
		expectInvalid(k8sClient.Create(ctx, newCluster(backup(v1alpha1.BackupSpec{Cron: "0 * * * *", Interval: every(time.Hour)}))), one)
	})

	It("refuses a time zone in cron: schedules are UTC, and the cron library panicked on it", func() {
		const utc = "cron is always in UTC"
		expectInvalid(k8sClient.Create(ctx, newCluster(backup(v1alpha1.BackupSpec{Cron: "CRON_TZ=UTC"}))), utc)
		expectInvalid(k8sClient.Create(ctx, newCluster(backup(v1alpha1.BackupSpec{Cron: "TZ=Europe/Berlin 0 3 * * *"}))), utc)
	})

	It("allows intervals of 10s and more", func() {
		Expect(k8sClient.Create(ctx, newCluster(backup(v1alpha1.BackupSpec{Interval: every(10 * time.Second)})))).To(Succeed())
		expectInvalid(k8sClient.Create(ctx, newCluster(backup(v1alpha1.BackupSpec{Interval: every(9 * time.Second)}))), "interval must be at least 10s")
		expectInvalid(k8sClient.Create(ctx, newCluster(backup(v1alpha1.BackupSpec{Interval: every(500 * time.Millisecond)}))), "interval must be at least 10s")
	})

	It("wants keep or maxAge in a retention, and keep at least 1", func() {
		Expect(k8sClient.Create(ctx, newCluster(backup(v1alpha1.BackupSpec{Interval: every(time.Hour),
			Retention: &v1alpha1.BackupRetention{Keep: ptr.To[int32](3), MaxAge: every(72 * time.Hour)}})))).To(Succeed())
		expectInvalid(k8sClient.Create(ctx, newCluster(backup(v1alpha1.BackupSpec{Interval: every(time.Hour),
			Retention: &v1alpha1.BackupRetention{}}))), "set keep, maxAge or both")
		expectInvalid(k8sClient.Create(ctx, newCluster(backup(v1alpha1.BackupSpec{Interval: every(time.Hour),
			Retention: &v1alpha1.BackupRetention{Keep: ptr.To[int32](0)}}))), "spec.backup.retention.keep")
	})
})

var _ = Describe("EtcdSnapshot deletionPolicy", func() {
	ctx := context.Background()

	It("defaults to Retain, takes Delete and nothing else", func() {
		s := newSnapshot(s3Location("prod/"))
		Expect(k8sClient.Create(ctx, s)).To(Succeed())
		Expect(s.Spec.DeletionPolicy).To(Equal(v1alpha1.DeletionRetain))
		d := newSnapshot(s3Location("prod/"))
		d.Spec.DeletionPolicy = v1alpha1.DeletionDelete
		Expect(k8sClient.Create(ctx, d)).To(Succeed())
		bad := newSnapshot(s3Location("prod/"))
		bad.Spec.DeletionPolicy = "Orphan"
		expectInvalid(k8sClient.Create(ctx, bad), "spec.deletionPolicy")
	})
})
