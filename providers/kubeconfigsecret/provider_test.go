package kubeconfigsecret_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/operator"
	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
)

var _ = Describe("Registration", func() {
	It("engages a cluster registered by a labelled Secret, and its events reach controllers", func(ctx SpecContext) {
		start := time.Now()
		register(ctx, "reg-w1", w1.Kubeconfig)
		cctx := waitConnected("reg-w1", 30*time.Second)
		AddReportEntry("register to engaged", time.Since(start).Round(time.Millisecond).String())
		Expect(cctx.Err()).NotTo(HaveOccurred())

		st := state("reg-w1")()
		Expect(st.Namespace).To(Equal(secretNS))
		Expect(st.SecretUID).NotTo(BeEmpty())
		Expect(st.Reason).To(Equal(kubeconfigsecret.ReasonConnected))
		Expect(st.ServerVersion).To(HavePrefix("v1."))
		Expect(st.Paused).To(BeFalse())
		Expect(hist.of("reg-w1")()).To(ContainElement(kubeconfigsecret.ReasonConnecting))

		cl, err := mgr.GetCluster(ctx, "reg-w1")
		Expect(err).NotTo(HaveOccurred())
		Expect(cl.GetConfig().QPS).To(BeNumerically("==", 50))
		Expect(cl.GetConfig().Timeout).To(Equal(30 * time.Second))

		createEtcdCluster(ctx, w1, "reg-events", "one")
		Eventually(rec.saw("reg-w1", "reg-events", "one")).WithTimeout(10 * time.Second).Should(BeTrue())

		By("exposing the paused annotation while staying engaged")
		putSecret(ctx, "reg-w1", map[string][]byte{testKey: w1.Kubeconfig}, true,
			map[string]string{testPaused: "true"})
		Eventually(func() bool { return state("reg-w1")().Paused }).Should(BeTrue())
		Expect(connected("reg-w1")()).To(BeTrue())
		Expect(cctx.Err()).NotTo(HaveOccurred(), "an annotation change must not re-engage")

		By("publishing metrics on controller-runtime's registry")
		families, err := metrics.Registry.Gather()
		Expect(err).NotTo(HaveOccurred())
		names := map[string]bool{}
		for _, f := range families {
			names[f.GetName()] = true
		}
		Expect(names).To(HaveKey(kubeconfigsecret.MetricEngageDuration))
		Expect(names).To(HaveKey(kubeconfigsecret.MetricClusters))
		Eventually(func() bool {
			families, _ := metrics.Registry.Gather()
			for _, f := range families {
				if f.GetName() == kubeconfigsecret.MetricProbeDuration {
					return true
				}
			}
			return false
		}).Should(BeTrue())
	})

	It("disengages a cluster whose Secret is deleted", func(ctx SpecContext) {
		register(ctx, "del-w1", w1.Kubeconfig)
		cctx := waitConnected("del-w1", 30*time.Second)

		deleteSecret(ctx, "del-w1")
		Eventually(cctx.Done()).WithTimeout(5 * time.Second).Should(BeClosed())
		Expect(registered("del-w1")()).To(BeFalse())
		_, err := mgr.GetCluster(ctx, "del-w1")
		Expect(err).To(MatchError(multicluster.ErrClusterNotFound))

		createEtcdCluster(ctx, w1, "del-events", "after")
		Consistently(rec.saw("del-w1", "del-events", "after")).WithTimeout(2 * time.Second).Should(BeFalse())
	})

	It("disengages a cluster whose Secret loses its label exactly like a deleted one, and leaks nothing", func(ctx SpecContext) {
		register(ctx, "unlabel-w1", w1.Kubeconfig)
		cctx := waitConnected("unlabel-w1", 30*time.Second)

		By("removing the label")
		putSecret(ctx, "unlabel-w1", map[string][]byte{testKey: w1.Kubeconfig}, false, nil)
		Eventually(cctx.Done()).WithTimeout(5 * time.Second).Should(BeClosed())
		Expect(registered("unlabel-w1")()).To(BeFalse())
		_, ok := provider.Context("unlabel-w1")
		Expect(ok).To(BeFalse())
		_, err := mgr.GetCluster(ctx, "unlabel-w1")
		Expect(err).To(MatchError(multicluster.ErrClusterNotFound))
		createEtcdCluster(ctx, w1, "unlabel-events", "after")
		Consistently(rec.saw("unlabel-w1", "unlabel-events", "after")).WithTimeout(2 * time.Second).Should(BeFalse())

		By("deleting the unlabelled Secret: still nothing registered")
		deleteSecret(ctx, "unlabel-w1")
		Consistently(registered("unlabel-w1")).WithTimeout(time.Second).Should(BeFalse())

		By("labelling a Secret of that name again: engaged again")
		register(ctx, "unlabel-w1", w1.Kubeconfig)
		waitConnected("unlabel-w1", 30*time.Second)
		Eventually(rec.saw("unlabel-w1", "unlabel-events", "after")).WithTimeout(10 * time.Second).Should(BeTrue())
	})

	It("disengages an un-labelled Secret's cluster even when the manager caches every Secret", func(ctx SpecContext) {
		// Without CacheByObject, un-labelling is an update event of a
		// Secret that stays in the cache (the upstream provider's predicate
		// drops it and leaks the cluster).
		const ns = "fleet-kubeconfigs-wide"
		namespace(ctx, mgmt, ns)
		wide, err := kubeconfigsecret.New(kubeconfigsecret.Options{Namespace: ns, Label: testLabel, Key: testKey, ProbeInterval: time.Second})
		Expect(err).NotTo(HaveOccurred())
		wmgr, err := mcmanager.New(mgmt.Config, wide, manager.Options{
			Scheme: operator.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(wide.SetupWithManager(ctx, wmgr)).To(Succeed())
		startManager(wmgr)

		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wide-w1",
			Labels: map[string]string{testLabel: "true"}},
			Data: map[string][]byte{testKey: w1.Kubeconfig}}
		Expect(mgmtC.Create(ctx, sec)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(mgmtC.Delete(ctx, sec))).To(Succeed()) })
		Eventually(func() bool { st, _ := wide.State("wide-w1"); return st.Connected }).WithTimeout(30 * time.Second).Should(BeTrue())
		cctx, ok := wide.Context("wide-w1")
		Expect(ok).To(BeTrue())

		sec.Labels = nil
		Expect(mgmtC.Update(ctx, sec)).To(Succeed())
		Eventually(cctx.Done()).WithTimeout(5 * time.Second).Should(BeClosed())
		Expect(wide.States()).To(BeEmpty())
		_, err = wmgr.GetCluster(ctx, "wide-w1")
		Expect(err).To(MatchError(multicluster.ErrClusterNotFound))
		Expect(mgmtC.Delete(ctx, sec)).To(Succeed())
		Consistently(wide.States).WithTimeout(time.Second).Should(BeEmpty())
	})

	It("caches only the labelled Secrets of its namespace", func(ctx SpecContext) {
		namespace(ctx, mgmt, "cache-elsewhere")
		elsewhere := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "cache-elsewhere", Name: "other",
			Labels: map[string]string{testLabel: "true"}},
			Data: map[string][]byte{testKey: w1.Kubeconfig}}
		Expect(mgmtC.Create(ctx, elsewhere)).To(Succeed())
		putSecret(ctx, "cache-plain", map[string][]byte{testKey: w1.Kubeconfig}, false, nil)
		register(ctx, "cache-labelled", w1.Kubeconfig)
		waitConnected("cache-labelled", 30*time.Second)

		c := mgr.GetLocalManager().GetCache()
		var list corev1.SecretList
		Expect(c.List(ctx, &list, client.InNamespace("cache-elsewhere"))).NotTo(Succeed(),
			"the manager cache must not hold Secrets of other namespaces")
		Expect(c.Get(ctx, client.ObjectKeyFromObject(elsewhere), &corev1.Secret{})).NotTo(Succeed())
		Expect(c.List(ctx, &list, client.InNamespace(secretNS))).To(Succeed())
		Expect(list.Items).NotTo(BeEmpty())
		for _, s := range list.Items {
			Expect(s.Labels).To(HaveKeyWithValue(testLabel, "true"), s.Name)
		}
		err := c.Get(ctx, types.NamespacedName{Namespace: secretNS, Name: "cache-plain"}, &corev1.Secret{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "an unlabelled Secret must not be cached: %v", err)
		Expect(mgr.GetLocalManager().GetAPIReader().Get(ctx,
			types.NamespacedName{Namespace: secretNS, Name: "cache-plain"}, &corev1.Secret{})).To(Succeed())

		Expect(registered("cache-plain")()).To(BeFalse())
		Expect(registered("other")()).To(BeFalse())
	})
})

var _ = Describe("Bad Secrets", func() {
	It("report a clear state without credentials, are retried, leave other clusters alone, and engage once fixed", func(ctx SpecContext) {
		register(ctx, "bad-good", w1.Kubeconfig)
		waitConnected("bad-good", 30*time.Second)

		badYAML := append(append([]byte(nil), w1.Kubeconfig...), []byte("\n  - : [unclosed\n\t:")...)
		register(ctx, "bad-yaml", badYAML)
		putSecret(ctx, "bad-nokey", map[string][]byte{"config": w1.Kubeconfig}, true, nil)
		wrongCA := withCA(w1.Kubeconfig)
		register(ctx, "bad-ca", wrongCA)
		badToken := withToken(w1.Kubeconfig, "not-a-valid-token-0123456789abcdef")
		register(ctx, "bad-token", badToken)

		expect := map[string]struct {
			reason, says string
			kc           []byte
		}{
			"bad-yaml":  {kubeconfigsecret.ReasonInvalidKubeconfig, "does not parse", w1.Kubeconfig}, // w1's credentials
			"bad-nokey": {kubeconfigsecret.ReasonInvalidSecret, `no data key "kubeconfig"`, w1.Kubeconfig},
			"bad-ca":    {kubeconfigsecret.ReasonTLSError, "certificate", wrongCA},
			"bad-token": {kubeconfigsecret.ReasonUnauthorized, "Unauthorized", badToken},
		}
		for name, want := range expect {
			Eventually(state(name)).WithTimeout(20*time.Second).Should(And(
				HaveField("Reason", want.reason), HaveField("Connected", false),
				HaveField("Message", ContainSubstring(want.says))), name)
			By(name + ": " + state(name)().Message)
			expectNoCredentials(state(name)().Message, want.kc)
			expectNoCredentials(state(name)().Message, w1.Kubeconfig)
			Expect(state(name)().Message).NotTo(ContainSubstring(string(badYAML)))
			// Retried with backoff: the failures keep counting.
			Eventually(func() int { return state(name)().ConsecutiveFailures }).WithTimeout(10*time.Second).
				Should(BeNumerically(">=", 2), name)
			_, err := mgr.GetCluster(ctx, multicluster.ClusterName(name))
			Expect(err).To(MatchError(multicluster.ErrClusterNotFound))
		}

		By("leaving the good cluster engaged, its events flowing")
		Expect(connected("bad-good")()).To(BeTrue())
		createEtcdCluster(ctx, w1, "bad-events", "one")
		Eventually(rec.saw("bad-good", "bad-events", "one")).WithTimeout(10 * time.Second).Should(BeTrue())

		By("engaging fixed Secrets")
		register(ctx, "bad-yaml", w1.Kubeconfig)
		putSecret(ctx, "bad-nokey", map[string][]byte{testKey: w1.Kubeconfig}, true, nil)
		waitConnected("bad-yaml", 10*time.Second)
		waitConnected("bad-nokey", 10*time.Second)
		Eventually(rec.saw("bad-yaml", "bad-events", "one")).WithTimeout(10 * time.Second).Should(BeTrue())
	})
})

var _ = Describe("Isolation", func() {
	It("engages a healthy cluster within seconds while a hung and a forbidden cluster are stuck", func(ctx SpecContext) {
		serviceAccount(ctx, mgmt, "iso-forbidden", "nobody", "")
		forbidden, err := mgmt.ServiceAccountKubeconfig(ctx, "iso-forbidden", "nobody", time.Hour)
		Expect(err).NotTo(HaveOccurred())
		Expect(w1.Hang()).To(Succeed())
		DeferCleanup(w1.Heal)

		register(ctx, "iso-hung", w1.Kubeconfig)
		register(ctx, "iso-forbidden", forbidden)
		Eventually(state("iso-forbidden")).WithTimeout(10 * time.Second).Should(HaveField("Reason", kubeconfigsecret.ReasonForbidden))
		time.Sleep(500 * time.Millisecond) // the hung cluster's pre-flight is under way

		start := time.Now()
		register(ctx, "iso-healthy", mgmt.Kubeconfig)
		waitConnected("iso-healthy", 10*time.Second)
		took := time.Since(start)
		AddReportEntry("healthy cluster engaged next to a hung and a forbidden one", took.Round(time.Millisecond).String())
		Expect(took).To(BeNumerically("<", 4*time.Second))

		hung := state("iso-hung")()
		Expect(hung.Connected).To(BeFalse())
		Expect(hung.Reason).To(Equal(kubeconfigsecret.ReasonConnecting), "the hung cluster is still in its pre-flight: %s", hung.Message)
		fb := state("iso-forbidden")()
		Expect(fb.Connected).To(BeFalse())
		Expect(fb.Message).To(ContainSubstring("list,watch etcdclusters.etcd.etcdfleet.io"))
		Expect(fb.Message).To(ContainSubstring("get pods/portforward"))
		expectNoCredentials(fb.Message, forbidden)

		createEtcdCluster(ctx, mgmt, "iso-events", "one")
		Eventually(rec.saw("iso-healthy", "iso-events", "one")).WithTimeout(10 * time.Second).Should(BeTrue())
		Expect(rec.saw("iso-forbidden", "iso-events", "one")()).To(BeFalse())

		By("reporting the hung cluster unreachable after the pre-flight timeout")
		Eventually(state("iso-hung")).WithTimeout(15 * time.Second).Should(And(
			HaveField("Reason", kubeconfigsecret.ReasonUnreachable), HaveField("Message", ContainSubstring("did not answer within"))))

		By("engaging it once it answers again")
		Expect(w1.Heal()).To(Succeed())
		waitConnected("iso-hung", 30*time.Second)
	})
})

var _ = Describe("Health", func() {
	It("disconnects a partitioned cluster after the failure threshold and re-engages it after Heal", func(ctx SpecContext) {
		register(ctx, "probe-w1", w1.Kubeconfig)
		cctx := waitConnected("probe-w1", 30*time.Second)
		Expect(state("probe-w1")().LastProbeTime).NotTo(BeZero())

		start := time.Now()
		Expect(w1.Partition()).To(Succeed())
		DeferCleanup(w1.Heal)
		Eventually(cctx.Done()).WithTimeout(10 * time.Second).Should(BeClosed())
		took := time.Since(start)
		AddReportEntry("partition to disengaged", took.Round(time.Millisecond).String())
		// 3 failures 250ms apart; never on the first failed probe.
		Expect(took).To(BeNumerically(">=", 500*time.Millisecond))
		// OnChange runs in its own goroutine, which may not have run yet.
		Eventually(hist.of("probe-w1")).WithTimeout(5 * time.Second).Should(ContainElement(kubeconfigsecret.ReasonDisconnected))
		Expect(connected("probe-w1")()).To(BeFalse())
		_, err := mgr.GetCluster(ctx, "probe-w1")
		Expect(err).To(MatchError(multicluster.ErrClusterNotFound))

		By("retrying with backoff while partitioned")
		Eventually(state("probe-w1")).Should(HaveField("Reason", kubeconfigsecret.ReasonUnreachable))
		Consistently(connected("probe-w1")).WithTimeout(time.Second).Should(BeFalse())

		By("re-engaging after Heal")
		Expect(w1.Heal()).To(Succeed())
		nctx := waitConnected("probe-w1", 15*time.Second)
		Expect(nctx).NotTo(BeIdenticalTo(cctx))
		createEtcdCluster(ctx, w1, "probe-events", "after-heal")
		Eventually(rec.saw("probe-w1", "probe-events", "after-heal")).WithTimeout(10 * time.Second).Should(BeTrue())
	})

	It("re-engages with a rotated token, and reconnects at once on 401", func(ctx SpecContext) {
		serviceAccount(ctx, w1, "rot", "fleet", "cluster-admin")
		tokA, err := w1.ServiceAccountKubeconfig(ctx, "rot", "fleet", time.Hour)
		Expect(err).NotTo(HaveOccurred())
		register(ctx, "rot-w1", tokA)
		ctxA := waitConnected("rot-w1", 30*time.Second)

		By("writing a new token into the Secret")
		tokB, err := w1.ServiceAccountKubeconfig(ctx, "rot", "fleet", time.Hour)
		Expect(err).NotTo(HaveOccurred())
		register(ctx, "rot-w1", tokB)
		Eventually(ctxA.Done()).WithTimeout(5 * time.Second).Should(BeClosed())
		ctxB := waitConnected("rot-w1", 15*time.Second)
		createEtcdCluster(ctx, w1, "rot-events", "b")
		Eventually(rec.saw("rot-w1", "rot-events", "b")).WithTimeout(10 * time.Second).Should(BeTrue())

		By("revoking the token (re-creating its ServiceAccount): 401, disengaged at once")
		Expect(w1.Clientset.CoreV1().ServiceAccounts("rot").Delete(ctx, "fleet", metav1.DeleteOptions{})).To(Succeed())
		serviceAccount(ctx, w1, "rot", "fleet", "cluster-admin")
		// The apiserver caches token authentications for 10s.
		Eventually(ctxB.Done()).WithTimeout(30 * time.Second).Should(BeClosed())
		Eventually(state("rot-w1")).WithTimeout(5 * time.Second).Should(HaveField("Reason", kubeconfigsecret.ReasonUnauthorized))
		expectNoCredentials(state("rot-w1")().Message, tokB)
		Expect(hist.of("rot-w1")()).NotTo(ContainElement(kubeconfigsecret.ReasonDisconnected),
			"a 401 must not wait for the failure threshold")

		By("engaging with the new ServiceAccount's token")
		tokC, err := w1.ServiceAccountKubeconfig(ctx, "rot", "fleet", time.Hour)
		Expect(err).NotTo(HaveOccurred())
		register(ctx, "rot-w1", tokC)
		waitConnected("rot-w1", 15*time.Second)
		createEtcdCluster(ctx, w1, "rot-events", "c")
		Eventually(rec.saw("rot-w1", "rot-events", "c")).WithTimeout(10 * time.Second).Should(BeTrue())
	})
})

var _ = Describe("Context", func() {
	It("is cancelled for reconcilers when the cluster is disengaged", func(ctx SpecContext) {
		register(ctx, "ctx-w1", w1.Kubeconfig)
		cctx := waitConnected("ctx-w1", 30*time.Second)
		var ec v1alpha1.EtcdClusterList
		cl, err := mgr.GetCluster(ctx, "ctx-w1")
		Expect(err).NotTo(HaveOccurred())
		Expect(cl.GetAPIReader().List(cctx, &ec)).To(Succeed())
		deleteSecret(ctx, "ctx-w1")
		Eventually(cctx.Done()).Should(BeClosed())
		Expect(cl.GetAPIReader().List(cctx, &ec)).To(MatchError(context.Canceled))
	})
})
