package kubeconfigsecret

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"unicode"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

const redacted = "[REDACTED]"

// redactor removes credentials from text shown to users. It is built from
// the kubeconfig bytes, so it knows every secret they hold.
type redactor []string

// newRedactor collects the credentials of every user of a parsed
// kubeconfig; when the bytes do not parse, every long word of them
// (tokens, base64 blobs) is treated as a credential instead.
func newRedactor(raw []byte, kc *clientcmdapi.Config) redactor {
	var r redactor
	add := func(s string) {
		if len(s) >= 6 {
			r = append(r, s, base64.StdEncoding.EncodeToString([]byte(s)))
		}
	}
	if kc == nil {
		for _, w := range strings.FieldsFunc(string(raw), func(c rune) bool {
			return unicode.IsSpace(c) || strings.ContainsRune(`"'{}[],:`, c)
		}) {
			if len(w) >= 12 {
				r = append(r, w)
			}
		}
	} else {
		for _, ai := range kc.AuthInfos {
			add(ai.Token)
			add(ai.Password)
			add(string(ai.ClientKeyData))
			add(string(ai.ClientCertificateData))
			if ai.AuthProvider != nil {
				for _, v := range ai.AuthProvider.Config {
					add(v)
				}
			}
			if ai.Exec != nil {
				for _, e := range ai.Exec.Env {
					add(e.Value)
				}
			}
		}
		for _, p := range proxyCredentials(kc) {
			if strings.HasSuffix(p, "@") {
				r = append(r, p) // user info of a URL: redact however short
			} else {
				add(p)
			}
		}
	}
	// Longest first, so that a secret containing another is removed whole.
	sort.Slice(r, func(i, j int) bool { return len(r[i]) > len(r[j]) })
	return r
}

func (r redactor) redact(s string) string {
	for _, sec := range r {
		s = strings.ReplaceAll(s, sec, redacted)
	}
	return s
}

func hashOf(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// parseKubeconfig turns Secret bytes into a rest.Config (current context).
// Only self-contained kubeconfigs are accepted: exec and auth-provider
// plugins would run programs in the operator, and file references
// (tokenFile, client-key, certificate-authority) would read the operator's
// own files, for example its ServiceAccount token, and send them to
// whatever server the Secret names. Errors never contain the bytes.
func parseKubeconfig(raw []byte) (*rest.Config, redactor, error) {
	kc, err := clientcmd.Load(raw)
	if err != nil {
		red := newRedactor(raw, nil)
		return nil, red, &failure{reason: ReasonInvalidKubeconfig,
			msg: "the kubeconfig does not parse: " + red.redact(err.Error())}
	}
	red := newRedactor(raw, kc)
	name := kc.CurrentContext
	ctx, ok := kc.Contexts[name]
	if !ok {
		return nil, red, &failure{reason: ReasonInvalidKubeconfig,
			msg: fmt.Sprintf("the kubeconfig's current-context %q does not exist", red.redact(name))}
	}
	if ai := kc.AuthInfos[ctx.AuthInfo]; ai != nil {
		switch {
		case ai.Exec != nil || ai.AuthProvider != nil:
			return nil, red, &failure{reason: ReasonInvalidKubeconfig,
				msg: "the kubeconfig's user uses an exec or auth-provider plugin; only inline credentials (token or client certificate data) are accepted"}
		case ai.TokenFile != "" || ai.ClientCertificate != "" || ai.ClientKey != "":
			return nil, red, &failure{reason: ReasonInvalidKubeconfig,
				msg: "the kubeconfig's user refers to files; only inline credentials (token or client certificate data) are accepted"}
		}
	}
	if cl := kc.Clusters[ctx.Cluster]; cl != nil && cl.CertificateAuthority != "" {
		return nil, red, &failure{reason: ReasonInvalidKubeconfig,
			msg: "the kubeconfig's cluster refers to a certificate-authority file; use certificate-authority-data"}
	}
	if f := refuseInsecure(kc.Clusters[ctx.Cluster]); f != nil {
		return nil, red, f
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*kc, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, red, &failure{reason: ReasonInvalidKubeconfig,
			msg: "the kubeconfig is not usable: " + red.redact(err.Error())}
	}
	return cfg, red, nil
}

// Purposes of the provider's requests to a workload cluster, passed to
// Options.UserAgent: the caches and reconcilers, the pre-flight, the
// health probe, and the periodic rights re-check.
const (
	PurposeControllers  = "controllers"
	PurposePreflight    = "preflight"
	PurposeProbe        = "probe"
	PurposeAccessReview = "access-review"
)

// DefaultUserAgent is Options.UserAgent's default: "kubeconfigsecret/"
// and the purpose.
func DefaultUserAgent(purpose string) string { return "kubeconfigsecret/" + purpose }

// cacheHTTPClient is the HTTP client of a cluster's cache: cfg without its
// Timeout. client-go applies rest.Config.Timeout to every request,
// watches included, so with it every informer's watch was cut and
// re-opened each RESTTimeout: 18 of a cluster's 24 requests a minute at
// rest (docs/performance.md). Without it a watch lasts as long as the
// reflector asks (5 to 10 minutes). The cache's lists and watches are
// still bounded: they end with the engagement context, which the probes
// cancel when the cluster stops answering, and the initial sync is
// bounded by SyncTimeout.
func cacheHTTPClient(cfg *rest.Config) (*http.Client, error) {
	c := rest.CopyConfig(cfg)
	c.Timeout = 0
	return rest.HTTPClientFor(c)
}

// withCacheHTTPClient gives the cluster's cache hc, unless an option of
// the caller's (Options.ClusterOptions) already gave it one.
func withCacheHTTPClient(hc *http.Client) cluster.Option {
	return func(o *cluster.Options) {
		if o.Cache.HTTPClient == nil {
			o.Cache.HTTPClient = hc
		}
	}
}

// RESTConfig is the rest.Config of a registration's kubeconfig under the
// provider's own rules (self-contained, https, verified, no proxy), for a
// caller that talks to a registered cluster outside the provider, such as
// a token rotation. Its errors hold none of the kubeconfig's credentials.
func RESTConfig(raw []byte) (*rest.Config, error) {
	cfg, _, err := parseKubeconfig(raw)
	if err != nil {
		return nil, err
	}
	return cfg, nil
}
