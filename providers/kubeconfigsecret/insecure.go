package kubeconfigsecret

import (
	"net/url"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ReasonInsecureKubeconfig: the kubeconfig's cluster turns off what keeps
// the credential safe in transit (insecure-skip-tls-verify) or routes it
// through a proxy (proxy-url). The message names the field, never its
// value.
const ReasonInsecureKubeconfig = "InsecureKubeconfig"

// refuseInsecure fails a cluster entry that would send the credential to
// a server whose certificate is not verified, or through a proxy: either
// hands the token to whoever sits on the path. A management cluster holds
// one such credential per workload cluster, so neither is worth the
// convenience; fix the CA or the network path instead.
func refuseInsecure(cl *clientcmdapi.Cluster) *failure {
	switch {
	case cl == nil:
		return nil
	case cl.InsecureSkipTLSVerify:
		return &failure{reason: ReasonInsecureKubeconfig,
			msg: "the kubeconfig's cluster sets insecure-skip-tls-verify; the credential would go to an unverified server: remove it and set certificate-authority-data"}
	case cl.ProxyURL != "":
		return &failure{reason: ReasonInsecureKubeconfig,
			msg: "the kubeconfig's cluster sets proxy-url; the credential would pass through the proxy: remove it and let the manager reach the apiserver directly"}
	}
	return nil
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
