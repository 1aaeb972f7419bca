package kubeconfigsecret_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
)

// A manager that starts with many clusters registered connects to at most
// MaxConcurrentConnects of them at once: with one slot, a healthy cluster
// waits while a hung one holds it through its pre-flight, and connects
// once that has timed out.
var _ = Describe("Connection slots", func() {
	It("connect at most MaxConcurrentConnects clusters at once; the others wait their turn", func(ctx SpecContext) {
		const label = "test.example/slots-kubeconfig"
		opts := testOptions
		opts.Label, opts.ControllerName, opts.OnChange = label, "kubeconfigsecret-slots", nil
		opts.MaxConcurrentConnects = 1
		p := startProvider(ctx, opts)
		st := func(name string) func() kubeconfigsecret.ClusterState {
			return func() kubeconfigsecret.ClusterState { s, _ := p.State(name); return s }
		}
		put := func(name string, kubeconfig []byte) {
			GinkgoHelper()
			sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretNS, Name: name, Labels: map[string]string{label: "true"}},
				Data: map[string][]byte{testKey: kubeconfig}}
			Expect(mgmtC.Create(ctx, sec)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(mgmtC.Delete(ctx, sec))).To(Succeed()) })
		}

		Expect(w1.Hang()).To(Succeed())
		DeferCleanup(w1.Heal)
		put("slots-hung", w1.Kubeconfig)
		Eventually(st("slots-hung")).WithTimeout(10 * time.Second).Should(HaveField("Reason", kubeconfigsecret.ReasonConnecting))
		time.Sleep(500 * time.Millisecond) // its pre-flight holds the one slot

		put("slots-healthy", mgmt.Kubeconfig)
		By("keeping the healthy cluster waiting while the hung one's pre-flight holds the slot")
		Consistently(func() bool { return st("slots-healthy")().Connected }).
			WithTimeout(opts.PreflightTimeout - 2*time.Second).Should(BeFalse())
		By("connecting it once the hung one's pre-flight timed out and gave the slot back")
		Eventually(func() bool { return st("slots-healthy")().Connected }).WithTimeout(20 * time.Second).Should(BeTrue())
		Expect(st("slots-hung")()).To(HaveField("Reason", kubeconfigsecret.ReasonUnreachable),
			"the healthy cluster connected before the hung one gave its slot back")
	})
})
