package kubeconfigsecret_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
)

var _ = Describe("Rights", func() {
	It("re-checks an engaged cluster's access at once when a request of its clients is answered 403, and keeps it engaged", func(ctx SpecContext) {
		const ns, sa, name = "rights-403", "fleet", "rights-w1"
		serviceAccount(ctx, w1, ns, sa, "cluster-admin")
		kc, err := w1.ServiceAccountKubeconfig(ctx, ns, sa, time.Hour)
		Expect(err).NotTo(HaveOccurred())
		register(ctx, name, kc)
		DeferCleanup(func(ctx context.Context) { deleteSecret(ctx, name) })
		cctx := waitConnected(name, 30*time.Second)
		engagedAt := time.Now()
		Expect(state(name)().MissingRights).To(BeEmpty())

		By("removing the ServiceAccount's binding and reading through the cluster's client")
		Expect(w1.Clientset.RbacV1().ClusterRoleBindings().Delete(ctx, ns+"-"+sa, metav1.DeleteOptions{})).To(Succeed())
		cl, err := mgr.GetCluster(ctx, name)
		Expect(err).NotTo(HaveOccurred())
		// Each poll makes a request, answered 403 once the authorizer has
		// seen the binding go; the periodic re-check is a minute away
		// (DefaultAccessRecheckInterval), so only the 403 can show it.
		Eventually(func() string {
			_ = cl.GetAPIReader().List(ctx, &corev1.PodList{})
			return state(name)().MissingRights
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).
			Should(ContainSubstring("create,delete,get,list,patch,watch pods"))
		Expect(time.Since(engagedAt)).To(BeNumerically("<", kubeconfigsecret.DefaultAccessRecheckInterval),
			"shown before the first periodic re-check could run")
		Expect(connected(name)()).To(BeTrue())
		Expect(cctx.Err()).NotTo(HaveOccurred(), "a cluster missing rights stays engaged")
	})
})

var _ = Describe("Rights re-check", func() {
	It("asks one rules review per interval while the rules stay the same, and every permission again when they change", func(ctx SpecContext) {
		const ns, sa, label = "rights-rules", "fleet", "test.example/rules-kubeconfig"
		serviceAccount(ctx, w1, ns, sa, "cluster-admin")
		kc, err := w1.ServiceAccountKubeconfig(ctx, ns, sa, time.Hour)
		Expect(err).NotTo(HaveOccurred())
		opts := testOptions
		opts.Label, opts.ControllerName, opts.OnChange = label, "kubeconfigsecret-rules", nil
		opts.AccessRecheckInterval = 250 * time.Millisecond
		p := startProvider(ctx, opts)
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretNS, Name: "rules-w1", Labels: map[string]string{label: "true"}},
			Data: map[string][]byte{testKey: kc}}
		Expect(mgmtC.Create(ctx, sec)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(mgmtC.Delete(ctx, sec))).To(Succeed()) })
		missing := func() string { st, _ := p.State("rules-w1"); return st.MissingRights }
		Eventually(func() bool { st, _ := p.State("rules-w1"); return st.Connected }).WithTimeout(30 * time.Second).Should(BeTrue())
		sweep := 0
		for _, c := range opts.AccessChecks {
			sweep += len(c.Verbs)
		}

		// Counted in w1's audit log: this ServiceAccount's reviews only.
		reviews := func(from, to time.Time) (rules, access int) {
			GinkgoHelper()
			time.Sleep(500 * time.Millisecond) // requests of the window still completing
			for path, n := range auditedBy(ns, sa, "create", from, to) {
				switch {
				case strings.HasSuffix(path, "/selfsubjectrulesreviews"):
					rules += n
				case strings.HasSuffix(path, "/selfsubjectaccessreviews"):
					access += n
				}
			}
			return rules, access
		}

		By("asking no access reviews while the rules stay the same")
		// Pre-flight kept the rules it saw: even the first look asks no
		// access reviews.
		from := time.Now()
		time.Sleep(3 * time.Second)
		rules, access := reviews(from, time.Now())
		AddReportEntry("at rest, 3 s, re-check every 250 ms", fmt.Sprintf("%d rules reviews, %d access reviews (a full check: %d)", rules, access, sweep))
		Expect(rules).To(BeNumerically(">=", 6), "about one rules review per interval")
		Expect(access).To(BeZero())

		By("checking every permission once when a binding adds rules")
		// A role of its own: the sandbox runs no aggregation controller, so
		// the aggregated built-in roles (view, edit) have no rules.
		_, err = w1.Clientset.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-extra"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		from = time.Now()
		_, err = w1.Clientset.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + sa + "-extra"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ns + "-extra"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		// The full check's reviews are counted as they land (on a loaded
		// machine they take seconds), then for a few more intervals in
		// which none may follow.
		Eventually(func() int { _, access = reviews(from, time.Now()); return access }).
			WithTimeout(30*time.Second).WithPolling(time.Second).Should(BeNumerically(">=", sweep), "one full check")
		time.Sleep(3 * time.Second)
		_, access = reviews(from, time.Now())
		Expect(access).To(Equal(sweep), "one full check, then none while the new rules stay")

		By("showing a revoked permission within a few intervals, with no request of the cluster's clients refused")
		removedAt := time.Now()
		Expect(w1.Clientset.RbacV1().ClusterRoleBindings().Delete(ctx, ns+"-"+sa, metav1.DeleteOptions{})).To(Succeed())
		Eventually(missing).WithTimeout(10 * time.Second).WithPolling(50 * time.Millisecond).Should(ContainSubstring("create,delete,get,list,patch,watch pods"))
		AddReportEntry("revoked permission shown after", time.Since(removedAt).Round(time.Millisecond).String())
	})
})
