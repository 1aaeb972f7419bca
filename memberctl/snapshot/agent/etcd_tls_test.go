package agent_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
	"github.com/etcdfleet/etcdfleet/test/etcdproc"
)

// TestSnapshotOfATLSEtcd: an etcd serving clients over TLS with client
// certificate authentication is snapshotted by an agent holding a client
// certificate of the CA etcd trusts; one holding another CA's certificate
// is refused by etcd, and the run fails on the dial stage well before its
// own timeout, naming the stage, the flag and the TLS refusal, in the
// termination message too.
func TestSnapshotOfATLSEtcd(t *testing.T) {
	needAssets(t)
	dir := t.TempDir()
	ca := newTestCA(t, "etcd-ca")
	server := ca.issue(t, dir, "server", []net.IP{net.IPv4(127, 0, 0, 1)})
	m := etcdproc.Reserve(t, "a")
	m.ClientURL = strings.Replace(m.ClientURL, "http://", "https://", 1)
	etcdproc.StartAt(t, m, filepath.Join(dir, "data"), "a", "agent-tls-test",
		"--cert-file="+server.cert, "--key-file="+server.key, "--trusted-ca-file="+ca.file, "--client-cert-auth=true")
	good := ca.issue(t, dir, "agent", nil)
	term := filepath.Join(dir, "termination-log")
	lim := agent.EtcdLimits{DialTimeout: 3 * time.Second, FirstByteTimeout: 30 * time.Second}
	cfg := agent.Config{Endpoints: []string{m.ClientURL}, CAFile: ca.file, CertFile: good.cert, KeyFile: good.key,
		Etcd: lim, Timeout: runBound, TerminationMessagePath: term}

	// etcd takes a moment to start: the first runs may find it down.
	var res agent.Result
	var err error
	for range 20 {
		cfg.File = filepath.Join(dir, "good.db")
		if res, err = agent.Run(context.Background(), cfg); err == nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil || res.SizeBytes == 0 {
		t.Fatalf("snapshot over mTLS with the trusted CA's certificate: %+v, %v", res, err)
	}

	other := newTestCA(t, "other-ca").issue(t, dir, "stranger", nil)
	cfg.CertFile, cfg.KeyFile, cfg.File = other.cert, other.key, filepath.Join(dir, "refused.db")
	_, err = agent.Run(context.Background(), cfg)
	t.Logf("refused: %v", err)
	var stage *agent.EtcdStageError
	if !errors.As(err, &stage) || stage.Stage != agent.EtcdStageDial {
		t.Fatalf("snapshot with another CA's certificate: err = %v, want the etcd dial stage", err)
	}
	for _, want := range []string{"etcd dial", "--etcd-dial-timeout", "tls"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if msg, _ := os.ReadFile(term); !strings.Contains(string(msg), "etcd dial") || !strings.Contains(string(msg), "tls") {
		t.Errorf("termination message %q does not name the stage and the refusal", msg)
	}
}

// testCA is a CA made in the test, its certificate written to file.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string
}

type pair struct{ cert, key string }

func newTestCA(t *testing.T, cn string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), cn+".crt")
	writePEM(t, file, "CERTIFICATE", der)
	return &testCA{cert: c, key: key, file: file}
}

// issue writes a key pair for cn, good for serving (on ips) and for
// client authentication, into dir.
func (ca *testCA) issue(t *testing.T, dir, cn string, ips []net.IP) pair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour), IPAddresses: ips,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p := pair{cert: filepath.Join(dir, cn+".crt"), key: filepath.Join(dir, cn+".key")}
	writePEM(t, p.cert, "CERTIFICATE", der)
	writePEM(t, p.key, "EC PRIVATE KEY", kb)
	return p
}

func writePEM(t *testing.T, file, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
