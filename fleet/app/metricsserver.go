package app

import (
	"crypto/tls"

	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/etcdfleet/etcdfleet/fleet/settings"
)

// metricsOptions serves /metrics as kubebuilder scaffolds it: with
// --metrics-secure, over HTTPS, each request's bearer token checked by a
// TokenReview and its right to get the non-resource URL /metrics by a
// SubjectAccessReview, both against the management apiserver (the chart's
// metrics-reader ClusterRole grants that right).
func metricsOptions(c settings.Config) metricsserver.Options {
	o := metricsserver.Options{BindAddress: c.MetricsBindAddress}
	if !c.MetricsSecure {
		return o
	}
	o.SecureServing = true
	o.CertDir = c.MetricsCertDir // "": a self-signed certificate
	o.FilterProvider = filters.WithAuthenticationAndAuthorization
	// HTTP/1.1 only: HTTP/2 stream resets let one client exhaust the
	// server (CVE-2023-44487), and a scraper gains nothing from HTTP/2.
	o.TLSOpts = []func(*tls.Config){func(t *tls.Config) { t.NextProtos = []string{"http/1.1"} }}
	return o
}
