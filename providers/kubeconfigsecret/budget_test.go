package kubeconfigsecret_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/operator"
	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
)

// One workload cluster cannot make the manager hold more than its budget
// (security review M5): a response past MaxResponseBytes, or caches past
// MaxObjects, disengage it with ReasonOverBudget, which drops its caches.
var _ = Describe("Budget", func() {
	var started int
	startBudgeted := func(ctx context.Context, name string, maxBytes, maxObjects int64, namespaces string) func() kubeconfigsecret.ClusterState {
		GinkgoHelper()
		label := "test.example/" + name + "-kubeconfig"
		opts := testOptions
		opts.Label, opts.ControllerName, opts.OnChange = label, fmt.Sprintf("kubeconfigsecret-budget-%d", started), nil
		started++
		opts.MaxResponseBytes, opts.MaxObjects = maxBytes, maxObjects
		p := startProvider(ctx, opts)
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretNS, Name: name, Labels: map[string]string{label: "true"},
			Annotations: map[string]string{testNSList: namespaces}}, Data: map[string][]byte{testKey: w1.Kubeconfig}}
		Expect(mgmtC.Create(ctx, sec)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(mgmtC.Delete(ctx, sec))).To(Succeed()) })
		return func() kubeconfigsecret.ClusterState { st, _ := p.State(name); return st }
	}
	overBudget := func(ctx context.Context, st func() kubeconfigsecret.ClusterState, why string) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			s := st()
			g.Expect(s.Connected).To(BeFalse())
			g.Expect(s.Reason).To(Equal(kubeconfigsecret.ReasonOverBudget))
			g.Expect(s.Message).To(ContainSubstring(why))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	}

	It("refuses a cluster whose apiserver answers past MaxResponseBytes", func(ctx SpecContext) {
		st := startBudgeted(ctx, "budget-bytes", 256, 0, "budget-bytes")
		overBudget(ctx, st, "exceeded 256 bytes (a single response)")
		Consistently(func() bool { return st().Connected }).WithTimeout(time.Second).Should(BeFalse())
	})

	It("disengages a cluster whose caches pass MaxObjects, and engages it again once they fit", func(ctx SpecContext) {
		const ns = "budget-objects"
		createEtcdCluster(ctx, w1, ns, "one")
		st := startBudgeted(ctx, "budget-objects", 0, 2, ns)
		Eventually(func() bool { return st().Connected }).WithContext(ctx).WithTimeout(30 * time.Second).Should(BeTrue())

		By("creating objects past the budget")
		createEtcdCluster(ctx, w1, ns, "two")
		createEtcdCluster(ctx, w1, ns, "three")
		overBudget(ctx, st, "more than 2 objects")

		By("removing one: the retry fits")
		cl, err := client.New(w1.Config, client.Options{Scheme: operator.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		Expect(cl.Delete(ctx, &v1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "three"}})).To(Succeed())
		Eventually(func() bool { return st().Connected }).WithContext(ctx).WithTimeout(30 * time.Second).Should(BeTrue())
	})
})
