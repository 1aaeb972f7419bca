package kubeconfigsecret

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"strings"
	"testing"
	"time"
)

// jwt builds an unsigned-looking JWT with the given claims JSON; the
// signature part is junk, as only the claims are read.
func jwt(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256","kid":"k"}`)) + "." + enc([]byte(claims)) + ".c2lnbmF0dXJl"
}

func TestJWTLifetime(t *testing.T) {
	iat, nbf, exp := time.Unix(1700000000, 0).UTC(), time.Unix(1700000100, 0).UTC(), time.Unix(1700003600, 0).UTC()
	for _, c := range []struct {
		name  string
		token string
		want  TokenLifetime
		ok    bool
	}{
		{"iat and exp", jwt(`{"iat":1700000000,"exp":1700003600,"sub":"system:serviceaccount:x:y"}`), TokenLifetime{iat, exp}, true},
		{"nbf wins over iat", jwt(`{"iat":1700000000,"nbf":1700000100,"exp":1700003600}`), TokenLifetime{nbf, exp}, true},
		{"fractional seconds", jwt(`{"iat":1700000000.5,"exp":1700003600.9}`), TokenLifetime{iat, exp}, true},
		{"padded payload", strings.Replace(jwt(`{"iat":1700000000,"exp":1700003600}`), ".c2ln", "==.c2ln", 1), TokenLifetime{iat, exp}, true},
		{"exp alone: no start", jwt(`{"exp":1700003600}`), TokenLifetime{ExpiresAt: exp}, true},
		{"start after exp: no start", jwt(`{"iat":1700009999,"exp":1700003600}`), TokenLifetime{ExpiresAt: exp}, true},
		{"no exp (legacy token)", jwt(`{"iss":"kubernetes/serviceaccount","sub":"x"}`), TokenLifetime{}, false},
		{"exp not a number", jwt(`{"exp":"tomorrow"}`), TokenLifetime{}, false},
		{"exp negative", jwt(`{"exp":-5}`), TokenLifetime{}, false},
		{"not a JWT", "s3cr3t-token-abcdefghijklmnop", TokenLifetime{}, false},
		{"bad base64", "a.%%%.c", TokenLifetime{}, false},
		{"payload not JSON", "a." + base64.RawURLEncoding.EncodeToString([]byte("nope")) + ".c", TokenLifetime{}, false},
		{"empty", "", TokenLifetime{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := jwtLifetime(c.token)
			if ok != c.ok || got != c.want {
				t.Errorf("jwtLifetime = %+v, %t; want %+v, %t", got, ok, c.want, c.ok)
			}
		})
	}
}

func TestTokenLifetimeOfKubeconfig(t *testing.T) {
	tok := jwt(`{"iat":1700000000,"exp":1700003600}`)
	if lt, ok := tokenLifetimeOf(kubeconfig("    token: " + tok)); !ok || lt.ExpiresAt.Unix() != 1700003600 || lt.IssuedAt.Unix() != 1700000000 {
		t.Errorf("JWT token: %+v %t", lt, ok)
	}
	for name, raw := range map[string][]byte{
		"opaque token":       kubeconfig("    token: " + token),
		"client certificate": kubeconfig("    client-certificate-data: Zm9v\n    client-key-data: YmFy"),
		"not YAML":           []byte(": : ["),
	} {
		if lt, ok := tokenLifetimeOf(raw); ok {
			t.Errorf("%s: lifetime %+v, want none", name, lt)
		}
	}
}

// clusterKubeconfig is a token kubeconfig with extra fields in its cluster.
func clusterKubeconfig(clusterExtra string) []byte {
	return fmt.Appendf(nil, "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\n%s"+
		"contexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: %s\n", clusterExtra, token)
}

func TestRefusesInsecureKubeconfigs(t *testing.T) {
	const proxyPassword = "pr0xy-passw0rd-abcdef"
	for _, c := range []struct{ name, extra, field string }{
		{"insecure-skip-tls-verify", "    insecure-skip-tls-verify: true\n", "insecure-skip-tls-verify"},
		{"proxy-url with credentials", "    proxy-url: http://fleet:" + proxyPassword + "@proxy.example:3128\n", "proxy-url"},
		{"proxy-url without credentials", "    proxy-url: socks5://proxy.example:1080\n", "proxy-url"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, red, err := parseKubeconfig(clusterKubeconfig(c.extra))
			var f *failure
			if !errors.As(err, &f) || f.reason != ReasonInsecureKubeconfig {
				t.Fatalf("got %v, want reason %s", err, ReasonInsecureKubeconfig)
			}
			if !strings.Contains(f.msg, c.field) {
				t.Errorf("message %q does not name %s", f.msg, c.field)
			}
			for _, secret := range []string{token, proxyPassword, "fleet:"} {
				if strings.Contains(f.msg, secret) {
					t.Errorf("message %q shows %q", f.msg, secret)
				}
			}
			// Any other message about this kubeconfig (a client-go error
			// quoting the proxy URL) is redacted too.
			if !strings.Contains(c.extra, proxyPassword) {
				return
			}
			if got := red.redact("proxyconnect tcp: http://fleet:" + proxyPassword + "@proxy.example:3128 refused"); strings.Contains(got, proxyPassword) {
				t.Errorf("redactor keeps the proxy password: %q", got)
			}
		})
	}
	if _, _, err := parseKubeconfig(clusterKubeconfig("    insecure-skip-tls-verify: false\n")); err != nil {
		t.Errorf("insecure-skip-tls-verify: false refused: %v", err)
	}
	for _, server := range []string{"http://127.0.0.1:6443", "http://169.254.169.254", "127.0.0.1:6443", "https://"} {
		raw := bytes.Replace(clusterKubeconfig(""), []byte("https://127.0.0.1:6443"), []byte(server), 1)
		var f *failure
		if _, _, err := parseKubeconfig(raw); !errors.As(err, &f) || f.reason != ReasonInsecureKubeconfig || !strings.Contains(f.msg, "https://") {
			t.Errorf("server %q: got %v, want reason %s asking for https://", server, err, ReasonInsecureKubeconfig)
		}
	}
}

func TestRedactsShortProxyCredentials(t *testing.T) {
	_, red, _ := parseKubeconfig(clusterKubeconfig("    proxy-url: http://u:pw@proxy.example:3128\n"))
	if got := red.redact("dial http://u:pw@proxy.example:3128"); strings.Contains(got, "u:pw@") {
		t.Errorf("redactor keeps short proxy user info: %q", got)
	}
}

// A body that is not a Kubernetes Status (what answered may be no
// apiserver: an internal service a registration aims at) never reaches a
// message: only its HTTP code does.
func TestClassifyHidesUnexpectedBodies(t *testing.T) {
	const body = "INTERNAL-ONLY-DATA from a metadata service"
	err := apierrors.NewGenericServerResponse(500, "get", schema.GroupResource{}, "", body, 0, true)
	f := classify(err, "pre-flight: server version", newRedactor(nil, nil))
	if strings.Contains(f.msg, "INTERNAL-ONLY-DATA") || !strings.Contains(f.msg, "HTTP 500") {
		t.Errorf("message %q: want the code without the body", f.msg)
	}
}
