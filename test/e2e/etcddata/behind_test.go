package etcddata_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
)

// spec.backup whose snapshots cannot complete: BackedUp turns False with
// BackupBehindSchedule once a due snapshot is still running past its grace
// (the suite's backupGrace), as the dashboard and the BackupBehind alert
// read it.
var _ = Describe("A backup behind its schedule", func() {
	const cluster, ns, name = "pf", "behind", "stuck"

	It("turns BackedUp False with BackupBehindSchedule, naming the snapshot and its due time, while the cluster serves", func(ctx SpecContext) {
		c := clients[cluster]
		sb.Namespace(ctx, cluster, ns)
		ec := e2eutil.NewEtcdCluster(ns, name, 1, false)
		ec.Spec.Backup = &v1alpha1.BackupSpec{
			Interval: &metav1.Duration{Duration: 10 * time.Second}, // the shortest allowed
			// A claim that does not exist: the snapshot Job's Pod waits
			// for it, so the due snapshot runs and never completes.
			Location: v1alpha1.SnapshotLocation{PVC: &v1alpha1.PVCLocation{ClaimName: "no-such-claim"}},
		}
		Expect(c.Create(ctx, ec)).To(Succeed())
		e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)

		var cond *metav1.Condition
		Eventually(func(g Gomega) {
			cur := &v1alpha1.EtcdCluster{}
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cur)).To(Succeed())
			cond = meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionBackedUp)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Reason).To(Equal(v1alpha1.ReasonBackupBehindSchedule), "%s", cond.Message)
		}).WithTimeout(10*time.Second + backupGrace + time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		Expect(cond.Message).To(And(ContainSubstring("snapshot "+name+"-"), ContainSubstring("has not completed by")))
		e2eutil.WaitAvailable(ctx, c, ns, name, time.Minute) // a stuck backup takes nothing from the cluster
	}, SpecTimeout(4*time.Minute))
})
