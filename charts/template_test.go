package charts_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/etcdfleet/etcdfleet/fleet/settings"
)

// TestDefaults renders the manager chart with its defaults.
func TestDefaults(t *testing.T) {
	objs := mustTemplate(t, mgmtChart, mgmtRelease, systemNS)
	d, c := managerContainer(t, objs)

	// Every setting is in the config file, and the manager reads back its
	// own defaults.
	got := managerConfig(t, objs)
	want := settings.Default()
	if got != want {
		t.Errorf("the rendered config loads as\n%+v\nwant the manager's defaults\n%+v", got, want)
	}
	data, _ := configFile(t, objs)
	file := map[string]any{}
	if err := yaml.Unmarshal([]byte(data), &file); err != nil {
		t.Fatal(err)
	}
	for _, s := range settings.Settings(new(settings.Config)) {
		if _, ok := lookup(file, s.Key); !ok {
			t.Errorf("setting %s is not in the manager's config file:\n%s", s.Key, data)
		}
	}
	if !got.LeaderElection {
		t.Errorf("leader election is not on: %s", data)
	}
	// The Pods roll when the config changes, and only then.
	sum := d.Spec.Template.Annotations["checksum/config"]
	other, _ := managerContainer(t, mustTemplate(t, mgmtChart, mgmtRelease, systemNS, "--set", "config.limiter.burst=11"))
	same, _ := managerContainer(t, mustTemplate(t, mgmtChart, mgmtRelease, systemNS, "--set", "replicas=3"))
	if sum == "" || other.Spec.Template.Annotations["checksum/config"] == sum || same.Spec.Template.Annotations["checksum/config"] != sum {
		t.Errorf("checksum/config %q, %q with another config, %q with the same: want the Pods to roll on config changes only",
			sum, other.Spec.Template.Annotations["checksum/config"], same.Spec.Template.Annotations["checksum/config"])
	}

	if *d.Spec.Replicas != 2 || d.Namespace != systemNS || d.Spec.Template.Spec.ServiceAccountName != saName {
		t.Errorf("Deployment replicas %d namespace %q serviceAccount %q", *d.Spec.Replicas, d.Namespace, d.Spec.Template.Spec.ServiceAccountName)
	}
	if c.Image != "ghcr.io/etcdfleet/etcdfleet-manager:0.1.0" {
		t.Errorf("image %q, want the appVersion tag", c.Image)
	}
	if len(c.Env) != 0 {
		t.Errorf("env %v: settings go through args", c.Env)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["probes"] != 8081 || ports["metrics"] != 8080 {
		t.Errorf("ports %v, want probes 8081 and metrics 8080", ports)
	}
	for probe, path := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path || probe.HTTPGet.Port.String() != "probes" {
			t.Errorf("probe %+v, want GET %s on port probes", probe, path)
		}
	}
	restricted(t, d)

	// The metrics Service selects the Pods and targets the metrics port.
	svc := convert[corev1.Service](t, find(t, objs, "Service", "etcdfleet-metrics"))
	for k, v := range svc.Spec.Selector {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("Service selector %v does not select the Pod labels %v", svc.Spec.Selector, d.Spec.Template.Labels)
		}
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != "metrics" || svc.Spec.Ports[0].Port != 8080 {
		t.Errorf("Service ports %+v", svc.Spec.Ports)
	}
	for _, o := range objs {
		if o.GetKind() == "ServiceMonitor" {
			t.Error("a ServiceMonitor is rendered by default")
		}
	}

	// RBAC: Secrets only in the registration namespace, exactly as
	// specified; that namespace is not the release namespace, and it is
	// created and kept on uninstall.
	role := convert[rbacv1.Role](t, find(t, objs, "Role", mgmtRelease))
	if role.Namespace != regNS {
		t.Errorf("Role in %q, want the registration namespace %s", role.Namespace, regNS)
	}
	if ns := find(t, objs, "Namespace", regNS); ns.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
		t.Errorf("registration Namespace annotations %v, want helm.sh/resource-policy=keep", ns.GetAnnotations())
	}
	samePerms(t, "Role", expand(t, role.Rules), mgmtNamespacedPerms)
	cr := convert[rbacv1.ClusterRole](t, find(t, objs, "ClusterRole", mgmtRelease))
	samePerms(t, "ClusterRole", expand(t, cr.Rules), mgmtClusterPerms)
	rb := convert[rbacv1.RoleBinding](t, find(t, objs, "RoleBinding", mgmtRelease))
	crb := convert[rbacv1.ClusterRoleBinding](t, find(t, objs, "ClusterRoleBinding", mgmtRelease))
	wantSubjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: saName, Namespace: systemNS}}
	if rb.Namespace != regNS || rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != role.Name || !slices.Equal(rb.Subjects, wantSubjects) {
		t.Errorf("RoleBinding %s/%s %+v %+v", rb.Namespace, rb.Name, rb.RoleRef, rb.Subjects)
	}
	if crb.RoleRef.Kind != "ClusterRole" || crb.RoleRef.Name != cr.Name || !slices.Equal(crb.Subjects, wantSubjects) {
		t.Errorf("ClusterRoleBinding %+v %+v", crb.RoleRef, crb.Subjects)
	}
	if sa := find(t, objs, "ServiceAccount", saName); sa.GetNamespace() != systemNS {
		t.Errorf("ServiceAccount in %q", sa.GetNamespace())
	}

	// crds/ are not templates: helm installs them before the release.
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			t.Errorf("CRD %s rendered as a template", o.GetName())
		}
	}
}

// restricted checks the Pod meets the restricted Pod Security Standard.
func restricted(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	ps := d.Spec.Template.Spec.SecurityContext
	c := d.Spec.Template.Spec.Containers[0]
	sc := c.SecurityContext
	switch {
	case ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.SeccompProfile == nil || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Errorf("pod securityContext %+v", ps)
	case sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Errorf("container securityContext %+v", sc)
	}
}

// derivedValues are settings whose value is "" in values.yaml because the
// chart derives the default: config.agentImage is the manager's own image
// (image.*, by digest when image.digest is set), so that pinning the
// manager pins the agent alike. TestDefaults checks the rendered config
// still loads as the manager's default.
var derivedValues = map[string]bool{"config.agentImage": true}

// TestValuesCoverEverySetting: values.yaml has every setting under config,
// at its config key, with the manager's default, and nothing else there.
func TestValuesCoverEverySetting(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartDir(mgmtChart), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	d := settings.Default()
	keys := map[string]bool{}
	for _, s := range settings.Settings(&d) {
		helm := "config." + s.Key
		keys[helm] = true
		v, ok := lookup(values, helm)
		if !ok {
			t.Errorf("values.yaml has no %s (setting %s)", helm, s.Key)
			continue
		}
		if derivedValues[helm] && v == "" {
			continue
		}
		if !sameValue(v, s.Value()) {
			t.Errorf("values.yaml %s is %v, but the manager's default for %s is %s", helm, v, s.Key, s.Value())
		}
	}
	for _, k := range leaves(values["config"], "config") {
		if !keys[k] {
			t.Errorf("values.yaml has %s, which is no setting of the manager", k)
		}
	}
}

// leaves are the dotted paths of the non-map values under v.
func leaves(v any, prefix string) []string {
	m, ok := v.(map[string]any)
	if !ok {
		return []string{prefix}
	}
	var out []string
	for k, sub := range m {
		out = append(out, leaves(sub, prefix+"."+k)...)
	}
	return out
}

func lookup(m map[string]any, path string) (any, bool) {
	var cur any = m
	for _, k := range strings.Split(path, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = mm[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// sameValue compares a YAML value with a setting's text, durations by
// their length.
func sameValue(v any, want string) bool {
	if s, ok := v.(string); ok {
		a, errA := time.ParseDuration(s)
		b, errB := time.ParseDuration(want)
		if errA == nil && errB == nil {
			return a == b
		}
	}
	return fmt.Sprint(v) == want
}

// TestNonDefaultValues renders the manager chart with non-default values.
func TestNonDefaultValues(t *testing.T) {
	objs := mustTemplate(t, mgmtChart, mgmtRelease, systemNS, nonDefault...)
	d, c := managerContainer(t, objs)
	if !slices.Contains(c.Args, "--zap-log-level=debug") {
		t.Errorf("args %q lack the extraArgs", c.Args)
	}
	got := managerConfig(t, objs)
	if got.Limiter.Rate != 5 || got.Limiter.Burst != 20 || got.Snapshots.MaxConcurrent != 2 || got.Snapshots.StartsPerMinute != 30 || got.EtcdAccess != "direct" || got.Workers != 16 ||
		got.WorkersPerCluster != 6 || got.Clusters.RequestTimeout != 3*time.Second || got.Namespace != "registrations" || got.LeaderElectionID != "my-lease" || got.Clusters.Burst != 1000000 ||
		got.Replacement.InitialBackoff != 500*time.Millisecond || got.Replacement.Window != 90*time.Minute ||
		got.Clusters.ProbeInterval != 20*time.Second {
		t.Errorf("the manager loads %+v", got)
	}
	if *d.Spec.Replicas != 3 || c.Image != "ghcr.io/etcdfleet/etcdfleet-manager:v9.9.9" {
		t.Errorf("replicas %d image %s", *d.Spec.Replicas, c.Image)
	}
	if d.Spec.Template.Annotations["example.com/a"] != "b" || d.Spec.Template.Spec.NodeSelector["kubernetes.io/os"] != "linux" {
		t.Errorf("pod annotations %v nodeSelector %v", d.Spec.Template.Annotations, d.Spec.Template.Spec.NodeSelector)
	}
	// The Role (Secrets, Lease) follows the registration namespace; the
	// Deployment and its ServiceAccount stay in the release namespace.
	if role := find(t, objs, "Role", ""); role.GetNamespace() != "registrations" {
		t.Errorf("Role in %q, want registrations", role.GetNamespace())
	}
	rb := convert[rbacv1.RoleBinding](t, find(t, objs, "RoleBinding", ""))
	if rb.Namespace != "registrations" || rb.Subjects[0].Namespace != systemNS {
		t.Errorf("RoleBinding %s subjects %+v", rb.Namespace, rb.Subjects)
	}
	sm := find(t, objs, "ServiceMonitor", mgmtRelease)
	if sm.GetAPIVersion() != "monitoring.coreos.com/v1" || sm.GetLabels()["release"] != "prometheus" {
		t.Errorf("ServiceMonitor %v", sm.Object)
	}
	port, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(port) != 1 || port[0].(map[string]any)["port"] != "metrics" {
		t.Errorf("ServiceMonitor endpoints %v", port)
	}
	svc := find(t, objs, "Service", "etcdfleet-metrics")
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	for k, v := range sel {
		if svc.GetLabels()[k] != v {
			t.Errorf("ServiceMonitor selector %v does not select the Service labels %v", sel, svc.GetLabels())
		}
	}

	// Metrics off (--set gives the number 0): no port, no Service. Decimals
	// from --set arrive as strings and still reach the manager as numbers.
	objs = mustTemplate(t, mgmtChart, mgmtRelease, systemNS, "--set", "config.metricsBindAddress=0",
		"--set", "config.limiter.rate=0.5", "--set", "config.clusters.qps=12.5")
	_, c = managerContainer(t, objs)
	if got := managerConfig(t, objs); got.Limiter.Rate != 0.5 || got.Clusters.QPS != 12.5 || got.MetricsBindAddress != "0" {
		t.Errorf("the manager loads rate %v qps %v metrics %q", got.Limiter.Rate, got.Clusters.QPS, got.MetricsBindAddress)
	}
	if len(c.Ports) != 1 {
		t.Errorf("metrics off: ports %+v", c.Ports)
	}
	for _, o := range objs {
		if o.GetKind() == "Service" {
			t.Errorf("metrics off still renders Service %s", o.GetName())
		}
	}
}

// TestServiceMonitorNeedsAPI: asking for a ServiceMonitor without the
// Prometheus Operator's API fails with a message saying so.
func TestServiceMonitorNeedsAPI(t *testing.T) {
	_, err := template(t, mgmtChart, mgmtRelease, systemNS, "--set", "serviceMonitor.enabled=true")
	if err == nil || !strings.Contains(err.Error(), "monitoring.coreos.com/v1") {
		t.Errorf("want an error naming monitoring.coreos.com/v1, got %v", err)
	}
}
