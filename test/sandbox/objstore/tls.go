package objstore

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"k8s.io/client-go/util/cert"
)

// Options of StartWith.
type Options struct {
	// TLS serves S3 over https only, with a certificate for IP signed by a
	// private CA made for this server (Server.CAFile): what a store behind
	// an internal CA looks like.
	TLS bool
}

// writeTLS makes a private CA and a serving certificate for IP in dir
// (client-go's self-signed pair: the serving certificate, then the CA that
// signed it) and returns the files ca.crt, tls.crt and tls.key.
func writeTLS(dir string) (caFile, certFile, keyFile string, err error) {
	crt, key, err := cert.GenerateSelfSignedCertKey(IP, nil, nil)
	if err != nil {
		return "", "", "", err
	}
	caFile, certFile, keyFile = filepath.Join(dir, "ca.crt"), filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for path, b := range map[string][]byte{caFile: crt, certFile: crt, keyFile: key} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return "", "", "", err
		}
	}
	return caFile, certFile, keyFile, nil
}

// transport is the client transport of Client: over TLS, it trusts only
// the server's CA.
func (s *Server) transport() (http.RoundTripper, error) {
	if s.CAFile == "" {
		return http.DefaultTransport, nil
	}
	b, err := os.ReadFile(s.CAFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("objstore: %s holds no certificate", s.CAFile)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return t, nil
}
