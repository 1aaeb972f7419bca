package e2eutil

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
	"github.com/etcdfleet/etcdfleet/memberctl/etcdaccess"
)

// secretReadTimeout bounds one read of the TLS Secrets during a handshake:
// the test's own apiserver connection answers in milliseconds, and a
// handshake that waits longer fails and is retried by gRPC anyway.
const secretReadTimeout = 5 * time.Second

// liveClientTLS is the TLS config of a test client of member m's cluster
// that follows the Secrets as they change, as a client that reloads its
// files would: at every handshake it trusts the server Secret's ca.crt as
// it is then and presents the operator client Secret's pair as it is then.
// A CA rotation then needs no new client: a client built once, before the
// rotation, keeps verifying the members and being verified by them.
func liveClientTLS(c client.Client, m *v1alpha1.EtcdMember) *tls.Config {
	current := func() (*tls.Config, error) {
		ctx, cancel := context.WithTimeout(context.Background(), secretReadTimeout)
		defer cancel()
		return etcd.ClientTLSConfig(ctx, c, m)
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The chain is verified in VerifyConnection, against the roots of
		// the moment; the standard check would use a fixed pool.
		InsecureSkipVerify: true, //nolint:gosec // verified below
		VerifyConnection: func(cs tls.ConnectionState) error {
			cfg, err := current()
			if err != nil {
				return err
			}
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the server sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err = cs.PeerCertificates[0].Verify(x509.VerifyOptions{DNSName: cs.ServerName,
				Roots: cfg.RootCAs, Intermediates: inter})
			return err
		},
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cfg, err := current()
			if err != nil || len(cfg.Certificates) == 0 {
				return &tls.Certificate{}, err
			}
			return &cfg.Certificates[0], nil
		},
	}
}

// DialAs asks a member of the cluster for its version over HTTPS through
// port-forward, presenting the key pair of Secret clientSecret and
// trusting the server Secret's ca.crt: nil when etcd accepted the pair,
// the TLS error when it refused it.
func DialAs(ctx context.Context, cfg *rest.Config, c client.Client, ns, cluster, clientSecret string) error {
	var list v1alpha1.EtcdMemberList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelCluster: cluster}); err != nil {
		return err
	}
	if len(list.Items) == 0 {
		return errors.New("no member")
	}
	m := list.Items[0].DeepCopy()
	m.Spec.TLS.OperatorClientSecretRef = clientSecret
	tlsCfg, err := etcd.ClientTLSConfig(ctx, c, m)
	if err != nil {
		return err
	}
	d, err := etcdaccess.NewPortForwardDialer(cfg, etcdaccess.PortForwardOptions{})
	if err != nil {
		return err
	}
	defer d.Close()
	dial := etcdaccess.ContextDialer(d)
	hc := &http.Client{Timeout: secretReadTimeout, Transport: &http.Transport{TLSClientConfig: tlsCfg,
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) { return dial(ctx, addr) }}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, etcd.MemberClientURL(m)+"/version", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /version: %s", resp.Status)
	}
	return nil
}
