package recovery_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	naming "github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/e2e/lincheck"
)

// A node that does not come back: the taint manager evicts its Pods, but
// only its kubelet would finish the deletes, so the member's Pod stays
// terminating. Past spec.recovery.nodeLossTimeout the member is replaced
// on a node that runs, with a new ID and a new claim, under a client
// workload checked for linearizability.
var _ = Describe("a node that does not come back", func() {
	It("has its PVC member replaced elsewhere with a new ID and a new claim once nodeLossTimeout passes, every key kept", func(ctx SpecContext) {
		const ns, name = "nodeloss", "nodeloss"
		c := clients[cluster]
		etcd, ids := startCluster(ctx, c, ns, name, false)
		defer etcd.Close()
		ec := &v1alpha1.EtcdCluster{}
		Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ec)).To(Succeed())
		patch := client.MergeFrom(ec.DeepCopy())
		ec.Spec.Recovery = &v1alpha1.RecoverySpec{NodeLossTimeout: &metav1.Duration{Duration: 5 * time.Second}}
		Expect(c.Patch(ctx, ec, patch)).To(Succeed())
		load := lincheck.StartIn(ctx, sb, cluster, ns, name)

		victim := e2eutil.FirstMember(ctx, c, ns, name)
		old := e2eutil.Pod(ctx, c, ns, victim)
		k := fleet.Cluster(cluster).Kubelet
		By("powering " + old.Spec.NodeName + " off for longer than the spec, and evicting its Pod as the taint manager does")
		Expect(k.PowerLoss(ctx, old.Spec.NodeName, 45*time.Second)).To(Succeed())
		Expect(c.Delete(ctx, old, client.GracePeriodSeconds(1))).To(Succeed())

		By("the stuck member goes, and a new member with a new ID and its own claim takes its place")
		for n := range expectReplacedWithNewID(ctx, c, ns, name, victim, ids, load) {
			Expect(e2eutil.Pod(ctx, c, ns, n).Spec.NodeName).NotTo(Equal(old.Spec.NodeName), "placed on a node that runs")
			Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: naming.PVCName(n)}, &corev1.PersistentVolumeClaim{})).To(Succeed())
		}
		sb.ExpectWarningEvent(ctx, cluster, ns, victim, "ReplacingNodeLostMember")
		etcd.Close()
		e2eutil.ExpectKeysIn(ctx, fleet.Cluster(cluster).Config, c, ns, name, "k", 100)

		By("the node booting finishes the old Pod's delete")
		Eventually(func() bool {
			err := c.Get(ctx, client.ObjectKeyFromObject(old), &corev1.Pod{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(BeTrue())
	}, SpecTimeout(6*time.Minute))
})
