package fleet_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
)

func rightsSpecs() {
	It("shows RBAC removed after engagement within one probe interval, keeps the cluster engaged, and shows the rights' return", func(ctx SpecContext) {
		baseline(ctx)
		const w = "w2"
		binding := registeredBinding(ctx, w)
		DeferCleanup(func(ctx context.Context) {
			restore(ctx, wc[w], binding)
			putSecret(ctx, w, kubeconfigData(goodKubeconfig[w]))
			waitConnected(ctx, time.Minute, w)
		})
		// A token of its own, so that the cluster is seen to engage on it.
		kc := registeredToken(ctx, w, "fleet-rights")
		token, err := clientcmd.RESTConfigFromKubeConfig(kc)
		Expect(err).NotTo(HaveOccurred())
		putSecret(ctx, w, kubeconfigData(kc))
		Eventually(func() string {
			cl, err := fm.Manager.GetCluster(ctx, multicluster.ClusterName(w))
			if err != nil {
				return ""
			}
			return cl.GetConfig().BearerToken
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Equal(token.BearerToken), "w2 engaged with the ServiceAccount's token")
		waitConnected(ctx, time.Minute, w)
		expectRow(ctx, w, fleetv1.ConditionAuthorized, metav1.ConditionTrue, fleetv1.ReasonRightsGranted)

		By("removing the ClusterRoleBinding that etcdfleetctl register created")
		cfg := managerConfig()
		removedAt := time.Now()
		Expect(wc[w].Delete(ctx, binding.DeepCopy())).To(Succeed())
		var shownAt time.Time
		Eventually(func() string {
			st, _ := fm.Provider.State(w)
			shownAt = time.Now()
			return st.MissingRights
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(20 * time.Millisecond).Should(ContainSubstring("pods"))
		// The bound: one probe interval, plus the access check's own
		// time, which ProbeTimeout bounds.
		took := shownAt.Sub(removedAt)
		AddReportEntry("missing rights shown after", took.Round(10*time.Millisecond).String())
		Expect(took).To(BeNumerically("<=", cfg.Clusters.ProbeInterval+cfg.Clusters.ProbeTimeout))
		c := expectRow(ctx, w, fleetv1.ConditionAuthorized, metav1.ConditionFalse, fleetv1.ReasonMissingRights)
		GinkgoWriter.Printf("FleetCluster %s: Authorized=False %q\n", w, c.Message)
		Expect(c.Message).To(And(ContainSubstring("create"), ContainSubstring("delete"), ContainSubstring("pods")))
		expectRow(ctx, w, fleetv1.ConditionReady, metav1.ConditionFalse, fleetv1.ReasonMissingRights)
		expectRow(ctx, w, fleetv1.ConditionConnected, metav1.ConditionTrue)
		Expect(rightsMissing(w)).To(BeNumerically(">", 0))
		expectEvent(ctx, w, corev1.EventTypeWarning, kubeconfigsecret.EventMissingRights)
		st, _ := fm.Provider.State(w)
		Expect(st.Connected).To(BeTrue(), "a cluster missing rights stays engaged")

		By("restoring the binding: the rights show as granted again")
		restore(ctx, wc[w], binding)
		expectRow(ctx, w, fleetv1.ConditionAuthorized, metav1.ConditionTrue, fleetv1.ReasonRightsGranted)
		Expect(rightsMissing(w)).To(BeZero())
	}, SpecTimeout(4*time.Minute))

	It("refuses a cluster whose admission policies are removed mid-heal within a probe interval (Unconstrained), deletes nothing there while it is, and heals it once they are back", func(ctx SpecContext) {
		baseline(ctx)
		const w = "w3"
		expectRow(ctx, w, fleetv1.ConditionConstrained, metav1.ConditionTrue, fleetv1.ReasonConstrained)
		bindings := policyBindings(ctx, w)
		DeferCleanup(func(ctx context.Context) {
			for _, b := range bindings {
				restore(ctx, wc[w], b)
			}
			waitConnected(ctx, time.Minute, w)
		})

		By("rebooting " + w + "'s nodes and, as its heal starts, deleting the ValidatingAdmissionPolicyBindings that etcdfleetctl register installed")
		logs := watchPods(ctx, w)
		before := podUIDs(ctx, w)
		rebootAt := reboot(ctx, w)
		removedAt := time.Now()
		for _, b := range bindings {
			Expect(wc[w].Delete(ctx, b.DeepCopy())).To(Succeed())
		}
		var shownAt time.Time
		Eventually(func(g Gomega) {
			st, _ := fm.Provider.State(w)
			shownAt = time.Now()
			g.Expect(st.Connected).To(BeFalse())
			g.Expect(st.Reason).To(Equal(kubeconfigsecret.ReasonUnconstrained))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(20 * time.Millisecond).Should(Succeed())
		AddReportEntry("unconstrained shown and disengaged after", shownAt.Sub(removedAt).Round(10*time.Millisecond).String())
		// The apiserver drops each binding from its policy cache on its own
		// watch event, so the first refusal may name only some probes; the
		// retries name them all.
		Eventually(func(g Gomega) {
			c := expectRow(ctx, w, fleetv1.ConditionConstrained, metav1.ConditionFalse, fleetv1.ReasonUnconstrained)
			g.Expect(c.Message).To(And(ContainSubstring("a Pod in namespace"), ContainSubstring("Job"), ContainSubstring("PersistentVolumeClaim"),
				ContainSubstring("Service"), ContainSubstring("PodDisruptionBudget")), "every probe is admitted without the policies")
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
		expectRow(ctx, w, fleetv1.ConditionReady, metav1.ConditionFalse, fleetv1.ReasonUnconstrained)
		expectEvent(ctx, w, corev1.EventTypeWarning, kubeconfigsecret.EventUnconstrained)
		Expect(series(kubeconfigsecret.MetricUnconstrained, map[string]string{"namespace": secretNS, "cluster": w}).GetGauge().GetValue()).To(Equal(1.0))
		Consistently(func() bool { st, _ := fm.Provider.State(w); return st.Connected }).WithContext(ctx).
			WithTimeout(3*time.Second).Should(BeFalse(), "not engaged while unconstrained")

		By("deleting no Pod while the credential is unconstrained, counted from the apiserver's side")
		time.Sleep(2 * time.Second) // a delete already sent when the cluster was disengaged may still land
		quietFrom := time.Now()
		time.Sleep(3 * time.Second)
		for _, d := range deletes(logs) {
			Expect(d.At.After(quietFrom)).To(BeFalse(), "Pod %s deleted at %s while %s was unconstrained", d.Name, d.At, w)
		}

		By("restoring the bindings: engaged again, and the heal completes")
		for _, b := range bindings {
			restore(ctx, wc[w], b)
		}
		waitConnected(ctx, 2*time.Minute, w)
		expectRow(ctx, w, fleetv1.ConditionConstrained, metav1.ConditionTrue, fleetv1.ReasonConstrained)
		waitHealed(ctx, rebootAt, before, 2*time.Minute, w)
		expectKeys(ctx, w)
	}, SpecTimeout(4*time.Minute))
}

// registeredBinding is the ClusterRoleBinding that etcdfleetctl register
// created in w for its ServiceAccount.
func registeredBinding(ctx context.Context, w string) *rbacv1.ClusterRoleBinding {
	GinkgoHelper()
	b := &rbacv1.ClusterRoleBinding{}
	Expect(wc[w].Get(ctx, client.ObjectKey{Name: "etcdfleet-workload"}, b)).To(Succeed())
	return b
}

// policyBindings are the admission policy bindings register installed in w.
func policyBindings(ctx context.Context, w string) []*admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	GinkgoHelper()
	var l admissionregistrationv1.ValidatingAdmissionPolicyBindingList
	Expect(wc[w].List(ctx, &l, client.MatchingLabels{"app.kubernetes.io/part-of": "etcdfleet"})).To(Succeed())
	Expect(l.Items).NotTo(BeEmpty())
	out := make([]*admissionregistrationv1.ValidatingAdmissionPolicyBinding, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out
}

// restore creates obj again as it was, if it is gone.
func restore(ctx context.Context, c client.Client, obj client.Object) {
	GinkgoHelper()
	o := obj.DeepCopyObject().(client.Object)
	o.SetResourceVersion("")
	o.SetUID("")
	Expect(client.IgnoreAlreadyExists(c.Create(ctx, o))).To(Succeed())
}

// rightsMissing reads the provider's missing-rights gauge of cluster w.
func rightsMissing(w string) float64 {
	GinkgoHelper()
	m := series(kubeconfigsecret.MetricRightsMissing, map[string]string{"namespace": secretNS, "cluster": w})
	Expect(m).NotTo(BeNil(), "no %s series for %s", kubeconfigsecret.MetricRightsMissing, w)
	return m.GetGauge().GetValue()
}
