package app_test

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/app"
	"github.com/etcdfleet/etcdfleet/fleet/settings"
	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
	"github.com/etcdfleet/etcdfleet/test/envtestenv"
)

var _ = Describe("the manager's security", func() {
	It("serves /metrics over HTTPS to authorized tokens only, warns of expiring tokens from their claims, and refuses insecure kubeconfigs", func(ctx SpecContext) {
		env, err := envtestenv.Start(envtestenv.ManagementCRDs, fleetv1.AddToScheme)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(env.Stop)
		const ns = "etcdfleet-clusters"
		Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())

		now := time.Now()
		expiringToken := jwt(now.Add(-9*time.Hour), now.Add(time.Hour)) // 10% of 10h left
		freshToken := jwt(now.Add(-time.Minute), now.Add(10*time.Hour))
		for name, kc := range map[string]string{
			"expiring": tokenKubeconfig(expiringToken, ""),
			"fresh":    tokenKubeconfig(freshToken, ""),
			"insecure": tokenKubeconfig(freshToken, "    insecure-skip-tls-verify: true\n"),
			"proxied":  tokenKubeconfig(freshToken, "    proxy-url: http://scraper:pr0xy-passw0rd@proxy.example:3128\n"),
		} {
			Expect(env.Client.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{fleetv1.RegistrationLabel: "true"}},
				Data:       map[string][]byte{fleetv1.KubeconfigKey: []byte(kc)},
			})).To(Succeed())
		}

		c := settings.Default()
		c.Namespace, c.LeaderElection, c.HealthProbeBindAddress = ns, false, "0"
		c.MetricsBindAddress = freeAddr()
		Expect(c.MetricsSecure).To(BeTrue(), "secure metrics are the default")
		stop := runFleet(env.Config, c)

		By("scraping /metrics with an authorized token, a token without the right, and none")
		reader, stranger := scraperTokens(ctx, env.Clientset, ns)
		url := "https://" + c.MetricsBindAddress + "/metrics"
		Eventually(func(g Gomega) {
			code, body := scrape(g, url, reader)
			g.Expect(code).To(Equal(http.StatusOK))
			g.Expect(body).To(ContainSubstring("etcdfleet_limiter_tokens_available"))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		denied, _ := scrape(Default, url, stranger)
		Expect(denied).To(Equal(http.StatusForbidden))
		// A bogus token or none: the filter's authenticator errs (500)
		// rather than deny (401); either way, no metrics.
		for _, token := range []string{"not-a-token", ""} {
			got, body := scrape(Default, url, token)
			Expect(got).NotTo(Equal(http.StatusOK), "token %q", token)
			Expect(body).NotTo(ContainSubstring("etcdfleet_"), "token %q", token)
		}
		// Plain HTTP on the TLS port gets Go's 400, never metrics.
		if resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + c.MetricsBindAddress + "/metrics"); err == nil {
			resp.Body.Close()
			Expect(resp.StatusCode).To(Equal(http.StatusBadRequest))
		}

		By("showing tokenExpiresAt and CredentialsExpiring from the token's claims, with a Warning Event")
		mc, err := client.New(env.Config, client.Options{Scheme: app.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		status := func(g Gomega, name string) fleetv1.FleetClusterStatus {
			fc := &fleetv1.FleetCluster{}
			g.Expect(mc.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, fc)).To(Succeed())
			return fc.Status
		}
		Eventually(func(g Gomega) {
			st := status(g, "expiring")
			g.Expect(st.TokenExpiresAt).NotTo(BeNil())
			g.Expect(st.TokenExpiresAt.Unix()).To(Equal(now.Add(time.Hour).Unix()))
			cond := meta.FindStatusCondition(st.Conditions, fleetv1.ConditionCredentialsExpiring)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(cond.Reason).To(Equal(fleetv1.ReasonTokenExpiring))
			g.Expect(cond.Message).To(ContainSubstring("etcdfleetctl register expiring"))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Eventually(func(g Gomega) {
			var events corev1.EventList
			g.Expect(mc.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
			var found []string
			for _, e := range events.Items {
				if e.InvolvedObject.Kind == "FleetCluster" && e.InvolvedObject.Name == "expiring" {
					found = append(found, e.Type+"/"+e.Reason)
				}
				g.Expect(e.InvolvedObject.Name).NotTo(Equal("fresh"), "no Event for a fresh token: %s", e.Message)
			}
			g.Expect(found).To(ContainElement(corev1.EventTypeWarning + "/" + fleetv1.ReasonTokenExpiring))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Eventually(func(g Gomega) {
			st := status(g, "fresh")
			g.Expect(st.TokenExpiresAt).NotTo(BeNil())
			cond := meta.FindStatusCondition(st.Conditions, fleetv1.ConditionCredentialsExpiring)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		}).WithTimeout(30 * time.Second).Should(Succeed())

		By("refusing kubeconfigs that skip TLS verification or use a proxy, naming the field and no credential")
		for name, field := range map[string]string{"insecure": "insecure-skip-tls-verify", "proxied": "proxy-url"} {
			Eventually(func(g Gomega) {
				cond := meta.FindStatusCondition(status(g, name).Conditions, fleetv1.ConditionConnected)
				g.Expect(cond).NotTo(BeNil())
				g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(cond.Reason).To(Equal(kubeconfigsecret.ReasonInsecureKubeconfig))
				g.Expect(cond.Message).To(ContainSubstring(field))
				g.Expect(cond.Message).NotTo(Or(ContainSubstring(freshToken), ContainSubstring("pr0xy-passw0rd")))
			}).WithTimeout(30 * time.Second).Should(Succeed())
		}
		stop()
	}, SpecTimeout(3*time.Minute))
})

// jwt is a token whose claims state the lifetime; its signature is junk,
// as the manager reads the claims without verifying them.
func jwt(issued, expires time.Time) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." +
		enc(fmt.Appendf(nil, `{"iss":"test","iat":%d,"exp":%d}`, issued.Unix(), expires.Unix())) + "." + enc([]byte("not-signed"))
}

// tokenKubeconfig aims at a closed port: the lifetime is known without
// ever reaching the cluster.
func tokenKubeconfig(token, clusterExtra string) string {
	return "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n" + clusterExtra +
		"contexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: " + token + "\n"
}

// scraperTokens mints tokens of two ServiceAccounts: one bound to a
// metrics-reader ClusterRole like the chart's, one bound to nothing.
func scraperTokens(ctx context.Context, cs kubernetes.Interface, ns string) (reader, stranger string) {
	GinkgoHelper()
	_, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "metrics-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "reader"}}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	token := func(name string) string {
		_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		return tr.Status.Token
	}
	return token("reader"), token("stranger")
}

// scrape GETs url with token (none when ""), trusting any certificate: the
// manager's is self-signed here.
func scrape(g Gomega, url, token string) (int, string) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	g.Expect(err).NotTo(HaveOccurred())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	// A bound keeps a hung endpoint from hanging the spec.
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := cl.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(body)
}

// freeAddr is a loopback address whose port is free right now.
func freeAddr() string {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().String()
}
