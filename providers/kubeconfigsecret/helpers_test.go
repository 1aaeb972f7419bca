package kubeconfigsecret_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/operator"
	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

// putSecret creates or replaces a kubeconfig Secret in the provider's
// namespace, and deletes it when the spec ends.
func putSecret(ctx context.Context, name string, data map[string][]byte, labelled bool, annotations map[string]string) {
	GinkgoHelper()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretNS, Name: name}}
	_, err := createOrUpdate(ctx, sec, func() {
		sec.Labels, sec.Annotations, sec.Data = nil, annotations, data
		if labelled {
			sec.Labels = map[string]string{testLabel: "true"}
		}
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(mgmtC.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretNS, Name: name}}))).To(Succeed())
	})
}

func createOrUpdate(ctx context.Context, sec *corev1.Secret, mutate func()) (bool, error) {
	err := mgmtC.Get(ctx, client.ObjectKeyFromObject(sec), sec)
	if client.IgnoreNotFound(err) != nil {
		return false, err
	}
	mutate()
	if err != nil {
		return true, mgmtC.Create(ctx, sec)
	}
	return false, mgmtC.Update(ctx, sec)
}

func register(ctx context.Context, name string, kubeconfig []byte) {
	GinkgoHelper()
	putSecret(ctx, name, map[string][]byte{testKey: kubeconfig}, true, nil)
}

func deleteSecret(ctx context.Context, name string) {
	GinkgoHelper()
	Expect(mgmtC.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretNS, Name: name}})).To(Succeed())
}

func state(name string) func() kubeconfigsecret.ClusterState {
	return func() kubeconfigsecret.ClusterState {
		st, _ := provider.State(name)
		return st
	}
}

func registered(name string) func() bool {
	return func() bool {
		_, ok := provider.State(name)
		return ok
	}
}

func connected(name string) func() bool {
	return func() bool { return state(name)().Connected }
}

func waitConnected(name string, timeout time.Duration) context.Context {
	GinkgoHelper()
	Eventually(connected(name)).WithTimeout(timeout).WithPolling(50*time.Millisecond).Should(BeTrue(),
		func() string { st := state(name)(); return st.Reason + ": " + st.Message })
	ctx, ok := provider.Context(name)
	Expect(ok).To(BeTrue())
	return ctx
}

// createEtcdCluster creates an EtcdCluster through the cluster's front door
// (no operator runs, so nothing else happens to it).
func createEtcdCluster(ctx context.Context, c *sandbox.Cluster, ns, name string) {
	GinkgoHelper()
	namespace(ctx, c, ns)
	cl, err := client.New(c.Config, client.Options{Scheme: operator.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	ec := &v1alpha1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.EtcdClusterSpec{Replicas: ptr.To[int32](1), Version: "3.7.3",
			Storage: v1alpha1.StorageSpec{Size: resource.MustParse("1Gi")}},
	}
	Expect(cl.Create(ctx, ec)).To(Succeed())
}

// credentials lists every secret a kubeconfig holds, raw and base64, and
// the kubeconfig itself: none may appear in a state message.
func credentials(kc []byte) []string {
	GinkgoHelper()
	cfg, err := clientcmd.Load(kc)
	Expect(err).NotTo(HaveOccurred())
	out := []string{string(kc)}
	for _, ai := range cfg.AuthInfos {
		for _, s := range []string{ai.Token, string(ai.ClientKeyData), ai.Password} {
			if s != "" {
				out = append(out, s, base64.StdEncoding.EncodeToString([]byte(s)))
			}
		}
	}
	return out
}

func expectNoCredentials(msg string, kc []byte) {
	GinkgoHelper()
	for _, c := range credentials(kc) {
		Expect(msg).NotTo(ContainSubstring(c))
	}
	Expect(msg).NotTo(ContainSubstring("PRIVATE KEY"))
}

// withCA returns kc trusting a fresh, unrelated CA.
func withCA(kc []byte) []byte {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "not-the-cluster-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	Expect(err).NotTo(HaveOccurred())
	cfg, err := clientcmd.Load(kc)
	Expect(err).NotTo(HaveOccurred())
	for _, c := range cfg.Clusters {
		c.CertificateAuthorityData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	}
	out, err := clientcmd.Write(*cfg)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// withToken returns kc authenticating with token only.
func withToken(kc []byte, token string) []byte {
	GinkgoHelper()
	cfg, err := clientcmd.Load(kc)
	Expect(err).NotTo(HaveOccurred())
	for _, ai := range cfg.AuthInfos {
		ai.ClientCertificateData, ai.ClientKeyData, ai.Token = nil, nil, token
	}
	out, err := clientcmd.Write(*cfg)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// serviceAccount creates ns/name in c, bound to clusterRole unless empty.
func serviceAccount(ctx context.Context, c *sandbox.Cluster, ns, name, clusterRole string) {
	GinkgoHelper()
	namespace(ctx, c, ns)
	_, err := c.Clientset.CoreV1().ServiceAccounts(ns).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	if clusterRole == "" {
		return
	}
	_, err = c.Clientset.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
	}, metav1.CreateOptions{})
	Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
}

// auditedBy returns, from w1's audit log, the requests ServiceAccount
// ns/sa sent in [from, to) with the given verb, counted by path (query
// left out).
func auditedBy(ns, sa, verb string, from, to time.Time) map[string]int {
	GinkgoHelper()
	evs, err := w1.Audit(from, to)
	Expect(err).NotTo(HaveOccurred())
	out := map[string]int{}
	for _, e := range evs {
		if e.User.Username == "system:serviceaccount:"+ns+":"+sa && e.Verb == verb {
			path, _, _ := strings.Cut(e.RequestURI, "?")
			out[path]++
		}
	}
	return out
}
