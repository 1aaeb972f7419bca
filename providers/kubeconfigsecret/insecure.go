package kubeconfigsecret

import (
	"net/url"
	"strings"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ReasonInsecureKubeconfig: the kubeconfig's cluster turns off what keeps
// the credential safe in transit (insecure-skip-tls-verify) or routes it
// through a proxy (proxy-url). The message names the field, never its
// value.
const ReasonInsecureKubeconfig = "InsecureKubeconfig"

// refuseInsecure fails a cluster entry that would send the credential to
// a server whose certificate is not verified, in clear, or through a
// proxy: each hands the token to whoever sits on the path. A management
// cluster holds one such credential per workload cluster, so none is worth
// the convenience; fix the CA or the network path instead. Plain http also
// lets a registration make the manager dial any internal address and
// reflect what it answers (security review M1).
func refuseInsecure(cl *clientcmdapi.Cluster) *failure {
	switch {
	case cl == nil:
		return nil
	case !isHTTPS(cl.Server):
		return &failure{reason: ReasonInsecureKubeconfig,
			msg: "the kubeconfig's cluster server is not an https:// URL; the credential would go in clear to an unauthenticated server: use the apiserver's https:// address"}
	case cl.InsecureSkipTLSVerify:
		return &failure{reason: ReasonInsecureKubeconfig,
			msg: "the kubeconfig's cluster sets insecure-skip-tls-verify; the credential would go to an unverified server: remove it and set certificate-authority-data"}
	case cl.ProxyURL != "":
		return &failure{reason: ReasonInsecureKubeconfig,
			msg: "the kubeconfig's cluster sets proxy-url; the credential would pass through the proxy: remove it and let the manager reach the apiserver directly"}
	}
	return nil
}

// isHTTPS reports whether server is an https URL with a host.
func isHTTPS(server string) bool {
	u, err := url.Parse(server)
	return err == nil && strings.EqualFold(u.Scheme, "https") && u.Host != ""
}

// proxyCredentials are the secrets a proxy-url carries (its user info),
// for the redactor: they may appear in any message about the kubeconfig.
func proxyCredentials(kc *clientcmdapi.Config) []string {
	var out []string
	for _, cl := range kc.Clusters {
		if cl == nil || cl.ProxyURL == "" {
			continue
		}
		u, err := url.Parse(cl.ProxyURL)
		if err != nil {
			// Unparsable: the whole URL may hold the credentials.
			out = append(out, cl.ProxyURL)
			continue
		}
		if u.User == nil {
			continue
		}
		// "user:password@" as written in the URL, whatever its length, and
		// the password alone (the redactor skips short ones).
		out = append(out, u.User.String()+"@")
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
	}
	return out
}
