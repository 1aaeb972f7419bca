package memberctl_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component/pod"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/e2e/lincheck"
)

// retemplateQuota is the raised --quota-backend-bytes (etcd's default is 2 GiB).
const retemplateQuota int64 = 3 << 30

// retemplate raises quotaBackendBytes and changes the resources of a
// running 3-member PVC cluster under the client workload, and waits until
// the cluster reports every member on the new Pod template and Reconciled,
// having reported the roll (Progressing Rolling, TemplateDrifted True) on
// the way. It checks the workload's history, every key, that each member
// kept its ID and had its Pod recreated exactly once, with the new flag and
// requests, and that a quorum of member Pods was Ready at every instant.
// (The roll's Events are checked by the envtest specs: after a version
// roll the EtcdCluster is past client-go's spam filter, 25 Events per
// object.)
func retemplate(ctx context.Context, cluster, ns, name string, keys int) {
	GinkgoHelper()
	c := clients[cluster]
	ids := e2eutil.MemberIDs(ctx, c, ns, name)
	log, err := e2eutil.WatchPods(ctx, fleet.Cluster(cluster).Clientset, ns)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(log.Stop)
	ready := log.ReadyAtStart()
	load := lincheck.StartIn(ctx, sb, cluster, ns, name)

	By("raising quotaBackendBytes and changing the resources")
	key := types.NamespacedName{Namespace: ns, Name: name}
	cur := &v1alpha1.EtcdCluster{}
	Expect(c.Get(ctx, key, cur)).To(Succeed())
	patch := client.MergeFrom(cur.DeepCopy())
	cur.Spec.Options = &v1alpha1.EtcdOptions{QuotaBackendBytes: ptr.To(retemplateQuota)}
	cur.Spec.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("96Mi")}}
	Expect(c.Patch(ctx, cur, patch)).To(Succeed())
	gen := cur.Generation

	seen := map[string]bool{}
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, key, cur)).To(Succeed())
		p := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionProgressing)
		d := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionTemplateDrifted)
		g.Expect(p).NotTo(BeNil())
		g.Expect(d).NotTo(BeNil())
		// Only a status of the new spec says anything about it.
		g.Expect(d.ObservedGeneration).To(BeNumerically(">=", gen))
		g.Expect(p.ObservedGeneration).To(BeNumerically(">=", gen))
		seen["Progressing="+p.Reason] = true
		seen["TemplateDrifted="+string(d.Status)] = true
		g.Expect(d.Status).To(Equal(metav1.ConditionFalse), "template: %s", d.Message)
		g.Expect(cur.Status.UpdatedMembers).To(Equal(int32(3)))
		g.Expect(p.Reason).To(Equal(v1alpha1.ReasonReconciled), "progressing: %s", p.Message)
		g.Expect(e2eutil.Available(cur)).To(BeTrue())
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	load.StopAndCheck()
	Expect(seen).To(HaveKey("Progressing="+v1alpha1.ReasonRolling), "status said a roll was under way")
	Expect(seen).To(HaveKey("TemplateDrifted=True"), "status said members ran an old template")

	By("every key is there, each member kept its ID, and its one new Pod runs the new template")
	cli := e2eutil.ConnectEtcd(ctx, fleet.Cluster(cluster).Config, c, ns, name)
	defer cli.Close()
	cli.ExpectKeys(ctx, "k", keys)
	Expect(e2eutil.MemberIDs(ctx, c, ns, name)).To(Equal(ids), "a PVC member keeps its ID")
	once := map[string]int{}
	for n, m := range e2eutil.Members(ctx, c, ns, name) {
		once[n] = 1
		p := &corev1.Pod{}
		Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, p)).To(Succeed())
		Expect(p.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationTemplateHash, pod.TemplateHash(&m.Spec)), "Pod %s", n)
		Expect(m.Status.TemplateHash).To(Equal(pod.TemplateHash(&m.Spec)), "status.templateHash of member %s", n)
		Expect(p.Spec.Containers[0].Command).To(ContainElement(fmt.Sprintf("--quota-backend-bytes=%d", retemplateQuota)), "Pod %s", n)
		Expect(p.Spec.Containers[0].Resources.Requests.Memory().String()).To(Equal("96Mi"), "Pod %s", n)
	}
	Expect(log.Count(watch.Deleted)).To(Equal(once), "each Pod was recreated once, under its member's name")

	By("never fewer than a quorum of member Pods Ready, as the apiserver reported them")
	expectQuorumReady(ready, log.Events(), 2)
}
