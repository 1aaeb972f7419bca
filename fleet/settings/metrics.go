package settings

// Metrics is how the manager serves /metrics (fleet/app's metricsOptions).
// Its keys sit at the top level of the config (metricsBindAddress, ...),
// as they always have.
type Metrics struct {
	MetricsBindAddress string `mapstructure:"metricsBindAddress" flag:"metrics-bind-address" help:"Address of the Prometheus metrics endpoint (\"0\" disables it)."`
	// MetricsSecure serves /metrics over HTTPS with authentication and
	// authorization; MetricsCertDir holds its certificate ("" self-signed).
	MetricsSecure  bool   `mapstructure:"metricsSecure" flag:"metrics-secure" help:"Serve metrics over HTTPS to authenticated and authorized clients only (TokenReview and SubjectAccessReview on the management cluster: get on the non-resource URL /metrics). false serves plain HTTP to anyone who reaches the port."`
	MetricsCertDir string `mapstructure:"metricsCertDir" flag:"metrics-cert-dir" help:"Directory holding tls.crt and tls.key for the HTTPS metrics endpoint, reloaded when they change; \"\" generates a self-signed certificate at start."`
}

// DefaultMetrics serves HTTPS on :8080 with a self-signed certificate.
func DefaultMetrics() Metrics { return Metrics{MetricsBindAddress: ":8080", MetricsSecure: true} }
