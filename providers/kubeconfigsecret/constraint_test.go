package kubeconfigsecret_test

import (
	"context"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
)

var _ = Describe("Constraint", func() {
	// startConstrained runs a provider of its own, whose Constraint answers
	// what admitted holds, with the cluster-admin credentials of w1, and
	// returns its cluster's state.
	startConstrained := func(ctx context.Context, name string, allow bool, admitted *atomic.Value) func() kubeconfigsecret.ClusterState {
		GinkgoHelper()
		ns, label := "constraint-"+name, "test.example/"+name+"-kubeconfig"
		serviceAccount(ctx, w1, ns, "fleet", "cluster-admin")
		kc, err := w1.ServiceAccountKubeconfig(ctx, ns, "fleet", time.Hour)
		Expect(err).NotTo(HaveOccurred())
		opts := testOptions
		opts.Label, opts.ControllerName, opts.OnChange = label, "kubeconfigsecret-"+name, nil
		opts.AccessRecheckInterval = 250 * time.Millisecond
		opts.AllowUnconstrained = allow
		opts.Constraint = func(context.Context, *rest.Config, []string) (string, error) { return admitted.Load().(string), nil }
		// cluster-admin holds it: reported, never refused.
		opts.ForbiddenChecks = []kubeconfigsecret.AccessCheck{{Resource: "secrets", Verbs: []string{"list"}}}
		p := startProvider(ctx, opts)
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretNS, Name: name, Labels: map[string]string{label: "true"}},
			Data: map[string][]byte{testKey: kc}}
		Expect(mgmtC.Create(ctx, sec)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(mgmtC.Delete(ctx, sec))).To(Succeed()) })
		return func() kubeconfigsecret.ClusterState { st, _ := p.State(name); return st }
	}

	It("refuses a cluster whose credentials are unconstrained, engages it once they are, and disengages it when they no longer are", func(ctx SpecContext) {
		var admitted atomic.Value
		admitted.Store("a Pod")
		st := startConstrained(ctx, "unconstrained", false, &admitted)
		Eventually(func(g Gomega) {
			s := st()
			g.Expect(s.Reason).To(Equal(kubeconfigsecret.ReasonUnconstrained))
			g.Expect(s.Message).To(ContainSubstring("a Pod"))
			g.Expect(s.Unconstrained).To(Equal("a Pod"))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Consistently(func() bool { return st().Connected }).WithTimeout(time.Second).Should(BeFalse(), "never engaged")
		Expect(st().OverPrivileged).To(Equal("list secrets"))

		By("engaging it once admission refuses the probes")
		admitted.Store("")
		Eventually(func() bool { return st().Connected }).WithContext(ctx).WithTimeout(30 * time.Second).Should(BeTrue())
		Expect(st().Unconstrained).To(BeEmpty())

		By("disengaging it within a few re-check intervals when admission admits one again")
		admitted.Store("a Service")
		Eventually(func(g Gomega) {
			s := st()
			g.Expect(s.Connected).To(BeFalse())
			g.Expect(s.Reason).To(Equal(kubeconfigsecret.ReasonUnconstrained))
		}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
	})

	It("engages an unconstrained cluster with AllowUnconstrained, and still says it is", func(ctx SpecContext) {
		var admitted atomic.Value
		admitted.Store("a Job")
		st := startConstrained(ctx, "allowed", true, &admitted)
		Eventually(func() bool { return st().Connected }).WithContext(ctx).WithTimeout(30 * time.Second).Should(BeTrue())
		Consistently(func() bool { return st().Connected }).WithTimeout(time.Second).Should(BeTrue(), "re-checks keep it engaged")
		Expect(st().Unconstrained).To(Equal("a Job"))
	})
})
