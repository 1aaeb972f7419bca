package memberctl_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/e2e/lincheck"
	"github.com/etcdfleet/etcdfleet/test/sandbox/kubelet"
)

// The lifecycle runs once per way of reaching etcd.
var _ = Describe("an EtcdCluster's lifecycle", func() {
	for _, cluster := range []string{"pf", "direct"} {
		Context("reached "+string(e2eutil.AccessFor(cluster)), Ordered, func() {
			const ns, name = "lifecycle", "main"
			var ids map[string]string

			It("bootstraps 3 members to Available and takes 1,000 keys", func(ctx SpecContext) {
				c := clients[cluster]
				sb.Namespace(ctx, cluster, ns)
				Expect(c.Create(ctx, e2eutil.NewEtcdCluster(ns, name, 3, false))).To(Succeed())
				e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
				etcd := e2eutil.ConnectEtcd(ctx, fleet.Cluster(cluster).Config, c, ns, name)
				defer etcd.Close()
				etcd.PutKeys(ctx, "k", 1000)
				etcd.ExpectKeys(ctx, "k", 1000)
				ids = e2eutil.MemberIDs(ctx, c, ns, name)
				Expect(ids).To(HaveLen(3))
				for n, id := range ids {
					Expect(id).NotTo(BeEmpty(), n)
				}
			}, SpecTimeout(3*time.Minute))

			for _, phase := range []string{"Succeeded", "Failed"} {
				It(fmt.Sprintf("heals a whole-cluster reboot that leaves every Pod %s: same IDs, every key, one replacement each", phase), func(ctx SpecContext) {
					c := clients[cluster]
					before := e2eutil.Members(ctx, c, ns, name)
					log, err := e2eutil.WatchPods(ctx, fleet.Cluster(cluster).Clientset, ns)
					Expect(err).NotTo(HaveOccurred())
					defer log.Stop()
					chooser := kubelet.AllFailed
					if phase == "Succeeded" {
						chooser = kubelet.AllSucceeded
					}
					uids := e2eutil.PodUIDs(ctx, c, ns, name)
					load := lincheck.StartIn(ctx, sb, cluster, ns, name)
					Expect(fleet.Cluster(cluster).Reboot(ctx, kubelet.RebootOptions{Phase: chooser, Outage: time.Second})).To(Succeed())
					e2eutil.WaitPodsReplaced(ctx, c, ns, uids, 2*time.Minute)
					e2eutil.WaitAvailable(ctx, c, ns, name, 2*time.Minute)
					load.StopAndCheck()
					Expect(e2eutil.MemberIDs(ctx, c, ns, name)).To(Equal(ids))
					etcd := e2eutil.ConnectEtcd(ctx, fleet.Cluster(cluster).Config, c, ns, name)
					defer etcd.Close()
					etcd.ExpectKeys(ctx, "k", 1000)
					after := e2eutil.Members(ctx, c, ns, name)
					deletes := log.Count(watch.Deleted)
					for n, m := range after {
						Expect(m.Status.Replacement).NotTo(BeNil(), n)
						Expect(m.Status.Replacement.Total-total(before[n])).To(BeEquivalentTo(1), "member %s replaced exactly once", n)
						Expect(m.Status.Replacement.LastReason).To(Equal("Terminated"))
						Expect(deletes[n]).To(Equal(1), "Pod %s deleted exactly once (seen by the apiserver)", n)
					}
				}, SpecTimeout(3*time.Minute))
			}

			It("scales 3→5→3 keeping every key and the survivors' IDs", func(ctx SpecContext) {
				c := clients[cluster]
				for _, replicas := range []int32{5, 3} {
					e2eutil.EditEtcdCluster(ctx, c, ns, name, &v1alpha1.EtcdCluster{}, func(ec *v1alpha1.EtcdCluster) { ec.Spec.Replicas = ptr.To(replicas) })
					Eventually(func() int { return len(e2eutil.Members(ctx, c, ns, name)) }).
						WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Equal(int(replicas)))
					e2eutil.WaitAvailable(ctx, c, ns, name, 3*time.Minute)
					now := e2eutil.MemberIDs(ctx, c, ns, name)
					for n := range now {
						if _, old := ids[n]; old {
							continue
						}
						// A new member joins as a learner and votes only once
						// promoted: the cluster's Events say both, in that order.
						Eventually(func(g Gomega) {
							g.Expect(sb.EventMessages(ctx, cluster, ns, name, "MemberAdded")).To(ContainElement(
								ContainSubstring("Added member "+n+" to etcd as learner")), "member %s joined as a learner", n)
							g.Expect(sb.EventMessages(ctx, cluster, ns, name, "MemberPromoted")).To(ContainElement(
								ContainSubstring("Promoted member "+n)), "member %s was promoted", n)
						}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
					}
					for n, id := range ids {
						if got, ok := now[n]; ok {
							Expect(got).To(Equal(id), "survivor %s keeps its ID", n)
						}
					}
					etcd := e2eutil.ConnectEtcd(ctx, fleet.Cluster(cluster).Config, c, ns, name)
					etcd.ExpectKeys(ctx, "k", 1000)
					etcd.Close()
				}
				Expect(e2eutil.MemberIDs(ctx, c, ns, name)).To(Equal(ids), "scale-down removes the newest members first")
			}, SpecTimeout(8*time.Minute))
		})
	}
})

func total(m v1alpha1.EtcdMember) int32 {
	if m.Status.Replacement == nil {
		return 0
	}
	return m.Status.Replacement.Total
}
