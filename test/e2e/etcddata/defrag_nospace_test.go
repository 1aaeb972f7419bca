package etcddata_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
)

// A cluster that ran out of space: etcd raised its NOSPACE alarm and
// refuses writes. Freeing the space is the user's part (delete, compact);
// the EtcdDefrag gives the file back and disarms the alarm, without which
// etcd would go on refusing writes.
var _ = Describe("EtcdDefrag on a cluster out of space", func() {
	const cluster, ns, name = "pf", "nospace", "tight"
	const quota = 4 << 20 // small enough to fill in a second through port-forward

	It("disarms the NOSPACE alarm once the space is free, so that etcd takes writes again", func(ctx SpecContext) {
		c := clients[cluster]
		sb.Namespace(ctx, cluster, ns)
		ec := e2eutil.NewEtcdCluster(ns, name, 1, false)
		ec.Spec.Options = &v1alpha1.EtcdOptions{QuotaBackendBytes: ptr.To[int64](quota)}
		Expect(c.Create(ctx, ec)).To(Succeed())
		e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
		etcdc := e2eutil.ConnectEtcd(ctx, fleet.Cluster(cluster).Config, c, ns, name)
		DeferCleanup(etcdc.Close)

		By("writing past the quota until etcd refuses with NOSPACE, then deleting it all and compacting")
		value := strings.Repeat("x", 64<<10)
		put := func(key string) error {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			_, err := etcdc.Put(cctx, key, value)
			return err
		}
		var refused error
		for i := 0; i < 2*quota/len(value) && refused == nil; i++ {
			refused = put(fmt.Sprintf("fill/%04d", i))
		}
		Expect(refused).To(MatchError(ContainSubstring("database space exceeded")), "etcd over its quota")
		del, err := etcdc.Delete(ctx, "fill/", clientv3.WithPrefix())
		Expect(err).NotTo(HaveOccurred())
		_, err = etcdc.Compact(ctx, del.Header.Revision, clientv3.WithCompactPhysical())
		Expect(err).NotTo(HaveOccurred())
		Expect(put("before-defrag")).To(MatchError(ContainSubstring("database space exceeded")),
			"the alarm outlives the space freed: only a disarm lets writes through")

		By("the EtcdCluster shows the alarm and the database at its quota, as etcd reports them")
		// A pass looks at etcd's health at most every HealthEvery (the
		// suite's, healthEvery); a poke wakes one sooner than the 60 s
		// steady requeue.
		Eventually(func(g Gomega) {
			cur := &v1alpha1.EtcdCluster{}
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cur)).To(Succeed())
			alarm := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionAlarmActive)
			near := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionNearQuota)
			if alarm == nil || alarm.Reason != v1alpha1.ReasonAlarmNoSpace {
				g.Expect(e2eutil.Poke(ctx, c, cur)).To(Succeed())
			}
			g.Expect(alarm).NotTo(BeNil())
			g.Expect(alarm.Reason).To(Equal(v1alpha1.ReasonAlarmNoSpace), "%s", alarm.Message)
			g.Expect(near).NotTo(BeNil())
			g.Expect(near.Status).To(Equal(metav1.ConditionTrue), "%s", near.Message)
			g.Expect(cur.Status.Health.QuotaBytes).To(BeEquivalentTo(quota))
		}).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())

		By("defragmenting")
		Expect(c.Create(ctx, &v1alpha1.EtcdDefrag{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "free"},
			Spec: v1alpha1.EtcdDefragSpec{ClusterRef: corev1.LocalObjectReference{Name: name}}})).To(Succeed())
		d := &v1alpha1.EtcdDefrag{}
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "free"}, d)).To(Succeed())
			g.Expect(d.Status.Phase.Terminal()).To(BeTrue(), "phase %q, conditions %+v", d.Status.Phase, d.Status.Conditions)
		}).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		Expect(d.Status.Phase).To(Equal(v1alpha1.DefragComplete), "conditions %+v", d.Status.Conditions)
		Expect(d.Status.Defragmented).To(BeEquivalentTo(1))
		Expect(meta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionReady).Message).To(ContainSubstring("NOSPACE alarm disarmed on 1 members"))
		Expect(put("after-defrag")).To(Succeed(), "etcd takes writes once the defragmentation is complete")
		Eventually(func(g Gomega) {
			list, err := fleet.Cluster(cluster).Clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list.Items).To(ContainElement(And(HaveField("InvolvedObject.Name", "free"),
				HaveField("Reason", v1alpha1.ReasonNoSpaceDisarmed), HaveField("Type", corev1.EventTypeNormal))))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	}, SpecTimeout(4*time.Minute))
})
