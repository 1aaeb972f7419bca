package kubeconfigsecret

import (
	"fmt"
	"strings"
	"testing"
)

// FuzzParseKubeconfig feeds parseKubeconfig kubeconfigs built around a
// secret token, and arbitrary bytes around them. Whatever the input, it
// must not panic, an accepted kubeconfig must carry only inline
// credentials and a server, and no error may show the token: error
// messages end up in FleetCluster conditions and Events. Neither may an
// accepted kubeconfig skip TLS verification, speak plain http or go
// through a proxy, nor an
// error show the proxy's password.
func FuzzParseKubeconfig(f *testing.F) {
	f.Add("https://127.0.0.1:6443", "s3cr3t-token-abcdefghijklmnop", "", "", "")
	f.Add("https://10.0.0.1", "another-long-secret-token-value", "    tokenFile: /var/run/secrets/token\n", "", "")
	f.Add("", "s3cr3t-token-abcdefghijklmnop", "", "current-context: nope\n", "")
	f.Add("https://[::1", "s3cr3t-token-abcdefghijklmnop", "", "", "")
	f.Add("https://h", "s3cr3t-token-abcdefghijklmnop", "    exec: {command: sh}\n", "", "")
	f.Add("https://h", "s3cr3t-token-abcdefghijklmnop", "", "", "    insecure-skip-tls-verify: true\n")
	f.Add("https://h", "s3cr3t-token-abcdefghijklmnop", "", "", "    proxy-url: http://user:"+fuzzProxyPassword+"@proxy:3128\n")
	f.Add("https://h", "s3cr3t-token-abcdefghijklmnop", "", "", "    proxy-url: \"http://u:"+fuzzProxyPassword+"@[::1\"\n")
	f.Add("https://h", "s3cr3t-token-abcdefghijklmnop", "", "", "    insecure-skip-tls-verify: false\n")
	f.Add("http://169.254.169.254", "s3cr3t-token-abcdefghijklmnop", "", "", "")
	f.Fuzz(func(t *testing.T, server, token, userExtra, tail, clusterExtra string) {
		if !printableASCII(token) {
			t.Skip("tokens are printable ASCII; YAML would decode escapes in others into a different string")
		}
		raw := fmt.Appendf(nil, "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: %q\n%s"+
			"contexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: %q\n%s%s",
			server, clusterExtra, token, userExtra, tail)
		cfg, red, err := parseKubeconfig(raw)
		if err != nil {
			if len(token) >= 6 && !strings.Contains(server, token) && strings.Contains(err.Error(), token) {
				t.Fatalf("error shows the token %q: %v", token, err)
			}
			if strings.Contains(clusterExtra, fuzzProxyPassword) && !strings.Contains(server+token, fuzzProxyPassword) &&
				strings.Contains(err.Error(), fuzzProxyPassword) {
				t.Fatalf("error shows the proxy password: %v", err)
			}
			return
		}
		if cfg.Insecure || cfg.Proxy != nil {
			t.Fatalf("accepted a kubeconfig that skips TLS verification or uses a proxy: %+v", cfg)
		}
		if cfg.ExecProvider != nil || cfg.AuthProvider != nil || cfg.BearerTokenFile != "" || cfg.CertFile != "" || cfg.KeyFile != "" || cfg.CAFile != "" {
			t.Fatalf("accepted a kubeconfig that reads files or runs plugins: %+v", cfg)
		}
		if !isHTTPS(cfg.Host) {
			t.Fatalf("accepted a kubeconfig whose server is not https: %q", cfg.Host)
		}
		if len(token) >= 6 && strings.Contains(red.redact("x "+token+" y"), token) {
			t.Fatalf("redactor keeps the token %q", token)
		}
	})
}

// fuzzProxyPassword is the password of the seeds' proxy URLs.
const fuzzProxyPassword = "pr0xy-s3cret-pass"

func printableASCII(s string) bool {
	for _, c := range []byte(s) {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}
