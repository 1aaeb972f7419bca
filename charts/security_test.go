package charts_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestSecureMetricsDefaults: /metrics is HTTPS with authn/authz by
// default, a metrics-reader ClusterRole is there to bind scrapers to, the
// ServiceMonitor scrapes with a bearer token over HTTPS, and a certificate
// Secret is mounted where metricsCertDir points.
func TestSecureMetricsDefaults(t *testing.T) {
	objs := mustTemplate(t, mgmtChart, mgmtRelease, systemNS, "--api-versions", "monitoring.coreos.com/v1",
		"--set", "serviceMonitor.enabled=true", "--set", "metrics.certSecret=metrics-tls")
	d, c := managerContainer(t, objs)
	if got := managerConfig(t, objs); !got.MetricsSecure || got.MetricsCertDir != "/etc/etcdfleet/metrics-cert" {
		t.Errorf("the manager loads metricsSecure %v metricsCertDir %q", got.MetricsSecure, got.MetricsCertDir)
	}
	vol := volume(t, d, "metrics-cert")
	mounted := slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == "metrics-cert" && m.MountPath == "/etc/etcdfleet/metrics-cert" && m.ReadOnly
	})
	if vol.Secret == nil || vol.Secret.SecretName != "metrics-tls" || !mounted {
		t.Errorf("certificate volume %+v mounts %+v", vol, c.VolumeMounts)
	}
	reader := convert[rbacv1.ClusterRole](t, find(t, objs, "ClusterRole", mgmtRelease+"-metrics-reader"))
	want := []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}
	if len(reader.Rules) != 1 || !slices.Equal(reader.Rules[0].NonResourceURLs, want[0].NonResourceURLs) ||
		!slices.Equal(reader.Rules[0].Verbs, want[0].Verbs) || len(reader.Rules[0].Resources) != 0 {
		t.Errorf("metrics-reader rules %+v, want %+v", reader.Rules, want)
	}
	ep := endpoint(t, find(t, objs, "ServiceMonitor", mgmtRelease))
	if ep["scheme"] != "https" || ep["bearerTokenFile"] != "/var/run/secrets/kubernetes.io/serviceaccount/token" || ep["tlsConfig"] == nil {
		t.Errorf("ServiceMonitor endpoint %v, want https with the ServiceAccount token", ep)
	}
}

// TestPlainMetrics: config.metricsSecure=false drops the review rights, the
// reader role and the ServiceMonitor's HTTPS.
func TestPlainMetrics(t *testing.T) {
	objs := mustTemplate(t, mgmtChart, mgmtRelease, systemNS, "--api-versions", "monitoring.coreos.com/v1",
		"--set", "serviceMonitor.enabled=true", "--set", "config.metricsSecure=false")
	if got := managerConfig(t, objs); got.MetricsSecure || got.MetricsCertDir != "" {
		t.Errorf("the manager loads metricsSecure %v metricsCertDir %q", got.MetricsSecure, got.MetricsCertDir)
	}
	cr := convert[rbacv1.ClusterRole](t, find(t, objs, "ClusterRole", mgmtRelease))
	var plain []perm
	for _, p := range mgmtClusterPerms {
		if !slices.Contains(mgmtMetricsAuthPerms, p) {
			plain = append(plain, p)
		}
	}
	samePerms(t, "ClusterRole", expand(t, cr.Rules), plain)
	for _, o := range objs {
		if o.GetName() == mgmtRelease+"-metrics-reader" {
			t.Errorf("%s %s rendered with plain metrics", o.GetKind(), o.GetName())
		}
	}
	if ep := endpoint(t, find(t, objs, "ServiceMonitor", mgmtRelease)); ep["scheme"] != nil || ep["bearerTokenFile"] != nil {
		t.Errorf("ServiceMonitor endpoint %v, want plain HTTP", ep)
	}
}

// TestRegistrationNamespace: registrations live apart from the release by
// default; in the release namespace nothing is created (NOTES warn then).
func TestRegistrationNamespace(t *testing.T) {
	for _, o := range mustTemplate(t, mgmtChart, mgmtRelease, systemNS, "--set", "config.namespace=") {
		if o.GetKind() == "Namespace" {
			t.Errorf("Namespace %s rendered for the release namespace", o.GetName())
		}
		if o.GetKind() == "Role" && o.GetNamespace() != systemNS {
			t.Errorf("Role in %s", o.GetNamespace())
		}
	}
	for _, o := range mustTemplate(t, mgmtChart, mgmtRelease, systemNS, "--set", "createNamespace=false") {
		if o.GetKind() == "Namespace" {
			t.Errorf("Namespace %s rendered with createNamespace=false", o.GetName())
		}
	}
}

// TestNetworkPolicy: off by default; on, it selects the manager Pods,
// admits the metrics port only, and lets out DNS and the apiserver ports
// (and etcd's with direct access).
func TestNetworkPolicy(t *testing.T) {
	for _, o := range mustTemplate(t, mgmtChart, mgmtRelease, systemNS) {
		if o.GetKind() == "NetworkPolicy" {
			t.Error("a NetworkPolicy is rendered by default")
		}
	}
	objs := mustTemplate(t, mgmtChart, mgmtRelease, systemNS, "--set", "networkPolicy.enabled=true", "--set", "config.etcdAccess=direct")
	d, _ := managerContainer(t, objs)
	np := convert[networkingv1.NetworkPolicy](t, find(t, objs, "NetworkPolicy", mgmtRelease))
	for k, v := range np.Spec.PodSelector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("podSelector %v does not select the manager Pods %v", np.Spec.PodSelector.MatchLabels, d.Spec.Template.Labels)
		}
	}
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].Ports) != 1 || np.Spec.Ingress[0].Ports[0].Port.String() != "metrics" {
		t.Errorf("ingress %+v, want the metrics port only", np.Spec.Ingress)
	}
	var out []string
	for _, r := range np.Spec.Egress {
		for _, p := range r.Ports {
			out = append(out, string(*p.Protocol)+"/"+p.Port.String())
		}
	}
	want := []string{"UDP/53", "TCP/53", "TCP/443", "TCP/6443", "TCP/2379"}
	if !slices.Equal(out, want) {
		t.Errorf("egress ports %v, want %v", out, want)
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
		t.Errorf("policyTypes %v", np.Spec.PolicyTypes)
	}
}

// endpoint is a ServiceMonitor's only endpoint.
func endpoint(t *testing.T, sm *unstructured.Unstructured) map[string]any {
	t.Helper()
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 1 {
		t.Fatalf("ServiceMonitor endpoints %v", eps)
	}
	return eps[0].(map[string]any)
}
