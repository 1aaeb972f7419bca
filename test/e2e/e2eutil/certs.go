package e2eutil

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

// certLifetime is how long the test certificates are valid: longer than
// any suite runs, and short enough that none outlives its sandbox usefully.
const certLifetime = 24 * time.Hour

// CA is a private certificate authority made in the test with crypto/x509,
// as cert-manager's CA issuer would hold one.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA certificate, what a Secret's ca.crt carries.
	PEM []byte
}

// NewCA makes a self-signed CA named cn.
func NewCA(cn string) *CA {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(certLifetime),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	Expect(err).NotTo(HaveOccurred())
	cert, err := x509.ParseCertificate(der)
	Expect(err).NotTo(HaveOccurred())
	return &CA{cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Leaf is a key pair the CA issued, in PEM.
type Leaf struct{ Cert, Key []byte }

// Issue signs a certificate for cn with the given SANs, good for serving
// and for client authentication both (etcd's peer certificates are both).
func (ca *CA) Issue(cn string, dnsNames []string, ips []net.IP) Leaf {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(certLifetime),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:    dnsNames, IPAddresses: ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	Expect(err).NotTo(HaveOccurred())
	kb, err := x509.MarshalECPrivateKey(key)
	Expect(err).NotTo(HaveOccurred())
	return Leaf{Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Key: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})}
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	Expect(err).NotTo(HaveOccurred())
	return n
}

// Bundle concatenates CA certificates into one ca.crt: the overlap bundle
// of a CA rotation trusts both.
func Bundle(cas ...*CA) []byte {
	var b []byte
	for _, ca := range cas {
		b = append(b, ca.PEM...)
	}
	return b
}

// ClusterTLS names the three Secrets of a TLS EtcdCluster: the members'
// client serving pair, their peer pair, and the operator's client pair.
type ClusterTLS struct{ Server, Peer, Operator string }

// TLSSecretsOf returns the Secret names TLS uses for cluster name.
func TLSSecretsOf(name string) ClusterTLS {
	return ClusterTLS{Server: name + "-server-tls", Peer: name + "-peer-tls", Operator: name + "-operator-tls"}
}

// Spec is the EtcdCluster's spec.tls naming these Secrets: client TLS
// with client certificates (mTLS) and peer TLS.
func (t ClusterTLS) Spec() *v1alpha1.TLSSpec {
	return &v1alpha1.TLSSpec{
		Client: &v1alpha1.ClientTLSSpec{ServerSecretRef: corev1.LocalObjectReference{Name: t.Server},
			OperatorClientSecretRef: &corev1.LocalObjectReference{Name: t.Operator}},
		Peer: &v1alpha1.PeerTLSSpec{SecretRef: corev1.LocalObjectReference{Name: t.Peer}},
	}
}

// memberDNSNames are the names a member certificate of cluster ns/name
// must carry: the members' DNS names (etcd.Host) with and without the
// cluster domain, and the client Service's.
func memberDNSNames(ns, name string) []string {
	sub := fmt.Sprintf("%s.%s.svc", etcd.HeadlessService(name), ns)
	client := fmt.Sprintf("%s.%s.svc", etcd.ClientService(name), ns)
	return []string{"*." + sub, "*." + sub + ".cluster.local", client, client + ".cluster.local"}
}

// sandboxPeerIPs: etcd checks a peer's client certificate against the
// address the connection comes from (a forward lookup of its DNS SANs, or
// its IP SANs). In a real cluster the peer's Pod IP resolves back to its
// hostname under the headless Service, which the wildcard SAN matches; in
// the sandbox every member dials from the loopback address 127.0.0.1, which
// no name resolves to, so the peer certificate also carries that IP.
var sandboxPeerIPs = []net.IP{net.ParseIP("127.0.0.1")}

// WriteTLS issues the cluster's three key pairs from issuer and writes
// their Secrets (kubernetes.io/tls, with trust as ca.crt), creating or
// replacing them as cert-manager renews a Certificate.
func (t ClusterTLS) WriteTLS(ctx context.Context, c client.Client, ns, name string, issuer *CA, trust []byte) {
	names := memberDNSNames(ns, name)
	for secret, leaf := range map[string]Leaf{
		t.Server:   issuer.Issue(name+"-server", names, nil),
		t.Peer:     issuer.Issue(name+"-peer", names, sandboxPeerIPs),
		t.Operator: issuer.Issue("etcdfleet-operator", nil, nil),
	} {
		WriteTLSSecret(ctx, c, ns, secret, leaf, trust)
	}
}

// WriteTLSSecret creates or updates a kubernetes.io/tls Secret.
func WriteTLSSecret(ctx context.Context, c client.Client, ns, name string, leaf Leaf, trust []byte) {
	data := map[string][]byte{corev1.TLSCertKey: leaf.Cert, corev1.TLSPrivateKeyKey: leaf.Key, "ca.crt": trust}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: corev1.SecretTypeTLS, Data: data}
	err := c.Create(ctx, s)
	if apierrors.IsAlreadyExists(err) {
		Expect(c.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
		s.Data = data
		err = c.Update(ctx, s)
	}
	Expect(err).NotTo(HaveOccurred())
}

// SetTrust replaces only the ca.crt of a TLS Secret, keeping its pair: the
// first and last steps of a CA rotation.
func SetTrust(ctx context.Context, c client.Client, ns, name string, trust []byte) {
	s := &corev1.Secret{}
	Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s)).To(Succeed())
	s.Data["ca.crt"] = trust
	Expect(c.Update(ctx, s)).To(Succeed())
}
