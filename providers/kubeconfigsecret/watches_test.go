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
)

var _ = Describe("Watches", func() {
	It("keeps each informer's watch open past RESTTimeout instead of re-opening it at that interval", func(ctx SpecContext) {
		const ns, sa, label = "watches", "fleet", "test.example/watches-kubeconfig"
		const restTimeout, window = 2 * time.Second, 8 * time.Second
		serviceAccount(ctx, w1, ns, sa, "cluster-admin")
		kc, err := w1.ServiceAccountKubeconfig(ctx, ns, sa, time.Hour)
		Expect(err).NotTo(HaveOccurred())
		opts := testOptions
		opts.Label, opts.ControllerName, opts.OnChange = label, "kubeconfigsecret-watches", nil
		opts.RESTTimeout = restTimeout
		p := startProvider(ctx, opts)
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretNS, Name: "watches-w1", Labels: map[string]string{label: "true"}},
			Data: map[string][]byte{testKey: kc}}
		registered := time.Now()
		Expect(mgmtC.Create(ctx, sec)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(mgmtC.Delete(ctx, sec))).To(Succeed()) })
		Eventually(func() bool { st, _ := p.State("watches-w1"); return st.Connected }).WithTimeout(30 * time.Second).Should(BeTrue())

		// Counted in w1's audit log: this ServiceAccount's watches, by
		// resource. A watch cut at RESTTimeout is re-opened at once, so
		// each informer would open window/restTimeout of them.
		from := time.Now()
		time.Sleep(window)
		time.Sleep(500 * time.Millisecond) // requests of the window still being logged
		Expect(auditedBy(ns, sa, "watch", registered, from)).NotTo(BeEmpty(), "the informers' first watches, opened when the cluster was engaged")
		perResource := auditedBy(ns, sa, "watch", from, from.Add(window))
		AddReportEntry(fmt.Sprintf("watches opened in %s with RESTTimeout %s", window, restTimeout), fmt.Sprint(perResource))
		for path, n := range perResource {
			// One is allowed: an informer a controller starts late.
			Expect(n).To(BeNumerically("<=", 1), "watches of %s opened in %s: re-opened at RESTTimeout (%s)", path, window, restTimeout)
		}
	})
})
