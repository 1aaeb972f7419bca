package fleet_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The manager binaries serve /metrics as the chart runs them: HTTPS,
// authenticated and authorized against the management apiserver. The
// scraper's ServiceAccount is bound to /metrics like the chart's
// metrics-reader ClusterRole; the stranger's is bound to nothing.
const (
	scraperSA  = "metrics-scraper"
	strangerSA = "metrics-stranger"
)

// scrapeTokens mints a token for the scraper and for the stranger,
// creating them and the scraper's right to get /metrics if need be.
func scrapeTokens(ctx context.Context) (scraper, stranger string) {
	cs := sb.Cluster("mgmt").Clientset
	ignoreExists := func(_ any, err error) {
		if !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
	}
	ignoreExists(cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: scraperSA},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{}))
	ignoreExists(cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: scraperSA},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: scraperSA},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: secretNS, Name: scraperSA}}}, metav1.CreateOptions{}))
	token := func(name string) string {
		ignoreExists(cs.CoreV1().ServiceAccounts(secretNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}))
		tr, err := cs.CoreV1().ServiceAccounts(secretNS).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		return tr.Status.Token
	}
	return token(scraperSA), token(strangerSA)
}

// getMetrics GETs url with a bearer token ("" for none). The manager's
// certificate is self-signed (no --metrics-cert-dir), so it is not
// verified; the bound keeps a hung endpoint from hanging the spec.
func getMetrics(url, token string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	return cl.Do(req)
}

// expectMetricsRefused: a token without the right gets 403; a bogus
// token or none gets no metrics (401, or 500 where the TokenReview of a
// malformed token errs rather than denies).
func expectMetricsRefused(url, stranger string) {
	resp, err := getMetrics(url, stranger)
	Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	Expect(resp.StatusCode).To(Equal(http.StatusForbidden), "scrape with a token lacking the right")
	for _, token := range []string{"not-a-token", ""} {
		resp, err := getMetrics(url, token)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).NotTo(Equal(http.StatusOK), "scrape with token %q", token)
	}
}
