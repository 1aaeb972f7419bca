package totalloss_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	naming "github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
)

// A whole PVC cluster whose storage is gone: every node loses power, and
// every member's claim is deleted with its Pod (the storage went with the
// nodes, and the Pods are force-deleted as PodGC does under the
// out-of-service taint). No member may start again under its old ID on a
// new, empty claim; with spec.recovery.restoreOnTotalLoss the cluster is
// re-bootstrapped from its newest snapshot in real object storage.
var _ = Describe("a PVC cluster whose every claim is lost", func() {
	const cluster, ns, name = "faults", "claims-lost", "cl"

	It("is restored from its newest snapshot, by new members on new claims", func(ctx SpecContext) {
		c := clients[cluster]
		ec, etcd, s3 := startRecoverable(ctx, cluster, ns, name, false)

		By("taking a snapshot")
		snap := snapshotNow(ctx, cluster, ns, name, s3.Endpoint)
		etcd.Close()
		oldMembers := e2eutil.MemberIDs(ctx, c, ns, name)

		By("losing power on every node, and with it every claim and Pod")
		Expect(fleet.Cluster(cluster).PowerLoss(ctx, 20*time.Second)).To(Succeed())
		for m := range oldMembers {
			Expect(client.IgnoreNotFound(c.Delete(ctx, &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: naming.PVCName(m)}}))).To(Succeed())
			Expect(client.IgnoreNotFound(c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: m}},
				client.GracePeriodSeconds(0)))).To(Succeed())
		}

		By("restored: a new cluster of new members, holding what the snapshot holds")
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(ec), ec)).To(Succeed())
			g.Expect(ec.Status.Recovery).NotTo(BeNil())
			g.Expect(ec.Status.Recovery.Phase).To(Equal(v1alpha1.RecoveryRestored))
		}).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
		e2eutil.WaitAvailable(ctx, c, ns, name, 3*time.Minute)
		Expect(ec.Status.Recovery.Source.SnapshotName).To(Equal(snap.Name))
		now := e2eutil.MemberIDs(ctx, c, ns, name)
		Expect(now).To(HaveLen(3))
		for n, id := range now {
			Expect(oldMembers).NotTo(HaveKey(n), "no member of the lost cluster runs in the new one")
			Expect(id).NotTo(BeElementOf(values(oldMembers)), "no old member ID on a new claim")
		}
		re := e2eutil.ConnectEtcd(ctx, fleet.Cluster(cluster).Config, c, ns, name)
		defer re.Close()
		re.ExpectKeys(ctx, "k", 100)
	}, SpecTimeout(10*time.Minute))
})

func values(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
