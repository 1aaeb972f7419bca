package charts_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The ServiceMonitor scrapes with Prometheus's token (review finding L6):
// these tests hold that it verifies whom it sends it to unless told, by
// name, not to.

var withMonitor = []string{"--api-versions", "monitoring.coreos.com/v1", "--set", "serviceMonitor.enabled=true"}

// metricsServerName is the metrics Service's DNS name in the documented
// install: what its certificate must name.
const metricsServerName = mgmtRelease + "-metrics." + systemNS + ".svc"

func tlsConfig(t *testing.T, objs []*unstructured.Unstructured) map[string]any {
	t.Helper()
	tls, _ := endpoint(t, find(t, objs, "ServiceMonitor", mgmtRelease))["tlsConfig"].(map[string]any)
	return tls
}

// verifying is the tlsConfig that checks the certificate of Secret secret.
func verifying(secret string) map[string]any {
	return map[string]any{"ca": map[string]any{"secret": map[string]any{"name": secret, "key": "ca.crt"}}, "serverName": metricsServerName}
}

// TestServiceMonitorVerifiesByDefault: with a certificate Secret the scrape
// verifies it (ca, serverName); without one the render fails rather than
// skip verification. If the default went back to insecureSkipVerify, the
// render without a certSecret would succeed, and this fails.
func TestServiceMonitorVerifiesByDefault(t *testing.T) {
	_, err := template(t, mgmtChart, mgmtRelease, systemNS, withMonitor...)
	if err == nil {
		t.Fatal("a ServiceMonitor without a certificate to verify is rendered: it would skip verification, or fail every scrape")
	}
	for _, want := range []string{"must verify the metrics certificate", "metrics.certSecret", "certManager.issuerRef",
		"serviceMonitor.insecureSkipVerify=true", metricsServerName} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the render fails without saying %q: %v", want, err)
		}
	}

	objs := mustTemplate(t, mgmtChart, mgmtRelease, systemNS, append(withMonitor, "--set", "metrics.certSecret=metrics-tls")...)
	if got, want := tlsConfig(t, objs), verifying("metrics-tls"); !reflect.DeepEqual(got, want) {
		t.Errorf("tlsConfig %v, want %v", got, want)
	}
	// serverName is the Service the ServiceMonitor selects, by its DNS name.
	svc := find(t, objs, "Service", "")
	if got := svc.GetName() + "." + svc.GetNamespace() + ".svc"; got != metricsServerName {
		t.Errorf("the metrics Service is %s, but the ServiceMonitor verifies %s", got, metricsServerName)
	}
	// The Secret verified is the one the manager serves.
	d := convert[appsv1.Deployment](t, find(t, objs, "Deployment", ""))
	if v := volume(t, d, "metrics-cert"); v.Secret == nil || v.Secret.SecretName != "metrics-tls" {
		t.Errorf("volume %+v, want the Secret metrics-tls", v)
	}
	// Further fields merge over the chart's; the CA can come from elsewhere.
	objs = mustTemplate(t, mgmtChart, mgmtRelease, systemNS, append(withMonitor, "--set", "metrics.certSecret=metrics-tls",
		"--set", "serviceMonitor.tlsConfig.minVersion=TLS13")...)
	if tls := tlsConfig(t, objs); tls["minVersion"] != "TLS13" || tls["serverName"] != metricsServerName || tls["ca"] == nil {
		t.Errorf("tlsConfig %v, want minVersion beside ca and serverName", tls)
	}
}

// TestServiceMonitorValuesDefaultToVerify: values.yaml itself, so that the
// default cannot move back to skipping verification through tlsConfig.
func TestServiceMonitorValuesDefaultToVerify(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartDir(mgmtChart), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	if v, _ := lookup(values, "serviceMonitor.insecureSkipVerify"); v != false {
		t.Errorf("serviceMonitor.insecureSkipVerify defaults to %v, want false", v)
	}
	if v, ok := lookup(values, "serviceMonitor.tlsConfig"); !ok || !reflect.DeepEqual(v, map[string]any{}) {
		t.Errorf("serviceMonitor.tlsConfig defaults to %v, want {}", v)
	}
	if v, _ := lookup(values, "config.metricsSecure"); v != true {
		t.Errorf("config.metricsSecure defaults to %v", v)
	}
}

// TestServiceMonitorInsecureOptOut: skipping verification takes its own,
// documented value; the old spelling in tlsConfig is refused, so an upgrade
// with old values does not keep it silently.
func TestServiceMonitorInsecureOptOut(t *testing.T) {
	objs := mustTemplate(t, mgmtChart, mgmtRelease, systemNS, append(withMonitor, "--set", "serviceMonitor.insecureSkipVerify=true")...)
	if got := tlsConfig(t, objs); !reflect.DeepEqual(got, map[string]any{"insecureSkipVerify": true}) {
		t.Errorf("tlsConfig %v, want insecureSkipVerify only", got)
	}
	_, err := template(t, mgmtChart, mgmtRelease, systemNS, append(withMonitor, "--set", "metrics.certSecret=metrics-tls",
		"--set", "serviceMonitor.tlsConfig.insecureSkipVerify=true")...)
	if err == nil || !strings.Contains(err.Error(), "serviceMonitor.tlsConfig.insecureSkipVerify is not honoured") {
		t.Errorf("tlsConfig.insecureSkipVerify: want a refusal, got %v", err)
	}
}

// TestMetricsCertificate: with certManager.issuerRef the chart has
// cert-manager issue the metrics certificate for the name the
// ServiceMonitor verifies, into the Secret the manager mounts and the
// ServiceMonitor takes the CA from.
func TestMetricsCertificate(t *testing.T) {
	issuer := []string{"--set", "certManager.issuerRef.name=metrics-ca", "--set", "certManager.issuerRef.kind=ClusterIssuer"}
	_, err := template(t, mgmtChart, mgmtRelease, systemNS, issuer...)
	if err == nil || !strings.Contains(err.Error(), "cert-manager.io/v1") {
		t.Errorf("without cert-manager's API: want an error naming cert-manager.io/v1, got %v", err)
	}
	objs := mustTemplate(t, mgmtChart, mgmtRelease, systemNS, append(append(withMonitor, issuer...), "--api-versions", "cert-manager.io/v1")...)
	cert := find(t, objs, "Certificate", mgmtRelease+"-metrics")
	secret, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	dns, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	ref, _, _ := unstructured.NestedStringMap(cert.Object, "spec", "issuerRef")
	if secret != mgmtRelease+"-metrics-tls" || !slices.Contains(dns, metricsServerName) ||
		!reflect.DeepEqual(ref, map[string]string{"name": "metrics-ca", "kind": "ClusterIssuer"}) {
		t.Errorf("Certificate secretName %q dnsNames %q issuerRef %v", secret, dns, ref)
	}
	if got, want := tlsConfig(t, objs), verifying(secret); !reflect.DeepEqual(got, want) {
		t.Errorf("tlsConfig %v, want %v", got, want)
	}
	d, _ := managerContainer(t, objs)
	if v, got := volume(t, d, "metrics-cert"), managerConfig(t, objs); v.Secret == nil || v.Secret.SecretName != secret ||
		got.MetricsCertDir != "/etc/etcdfleet/metrics-cert" {
		t.Errorf("volume %+v metricsCertDir %q: the manager does not serve the issued certificate", v, got.MetricsCertDir)
	}
	// A certSecret given names the Secret cert-manager writes.
	objs = mustTemplate(t, mgmtChart, mgmtRelease, systemNS, append(append(withMonitor, issuer...), "--api-versions", "cert-manager.io/v1",
		"--set", "metrics.certSecret=mine")...)
	if s, _, _ := unstructured.NestedString(find(t, objs, "Certificate", "").Object, "spec", "secretName"); s != "mine" {
		t.Errorf("Certificate secretName %q, want metrics.certSecret", s)
	}
	// No Certificate without an issuer, nor for plain metrics.
	for _, args := range [][]string{nil, append(issuer, "--set", "config.metricsSecure=false")} {
		for _, o := range mustTemplate(t, mgmtChart, mgmtRelease, systemNS, args...) {
			if o.GetKind() == "Certificate" {
				t.Errorf("%q renders a Certificate", args)
			}
		}
	}
}
