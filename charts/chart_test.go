// Tests of the helm charts in this directory: charts/etcdfleet (the manager,
// on the management cluster) and charts/etcdfleet-workload (CRDs and RBAC on
// each workload cluster). They lint and render both charts, check that the
// values schema rejects bad values, that every manager setting reaches the
// manager's flags, that the CRDs and the workload RBAC have not drifted from
// config/, and, on real kube-apiservers (test/sandbox), that the RBAC grants
// exactly what the manager needs and that the manager, running with those
// identities, heals a reboot.
//
// helm is $HELM, or the Makefile's HELM_VERSION in its tools cache, built
// with `make helm` when missing.
package charts_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	"github.com/etcdfleet/etcdfleet/config/settings"
	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/app"
	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/operator"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
	"github.com/etcdfleet/etcdfleet/test/sandbox/kubelet"
)

const (
	mgmtChart     = "etcdfleet"
	workloadChart = "etcdfleet-workload"
	// The documented installs: release etcdfleet of the manager chart and
	// release etcdfleet-workload of the workload chart, both in
	// etcdfleet-system. Their objects are then named as config/ names them.
	mgmtRelease     = "etcdfleet"
	workloadRelease = "etcdfleet-workload"
	systemNS        = "etcdfleet-system"
	// saName is the ServiceAccount of both charts' documented installs.
	saName = "etcdfleet"
)

// root is the repository root.
var root = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}()

func chartDir(name string) string { return filepath.Join(root, "charts", name) }

var (
	helmOnce sync.Once
	helmPath string
	helmErr  error
)

// helmBinary returns $HELM, or the helm the Makefile installs (its
// HELM_VERSION under its tools cache), running `make helm` when missing.
func helmBinary(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() {
		if p := os.Getenv("HELM"); p != "" {
			helmPath = p
			return
		}
		mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
		if err != nil {
			helmErr = err
			return
		}
		m := regexp.MustCompile(`(?m)^HELM_VERSION\s*\?=\s*(\S+)`).FindSubmatch(mk)
		if m == nil {
			helmErr = errors.New("no HELM_VERSION in the Makefile")
			return
		}
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				helmErr = err
				return
			}
			cache = filepath.Join(home, ".cache")
		}
		helmPath = filepath.Join(cache, "etcdfleet-tools", "helm-"+string(m[1]), "helm")
		if _, err := os.Stat(helmPath); err == nil {
			return
		}
		cmd := exec.Command("make", "helm")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			helmErr = fmt.Errorf("make helm: %v\n%s", err, out)
		}
	})
	if helmErr != nil {
		t.Fatal(helmErr)
	}
	return helmPath
}

// runHelm runs helm with its state in a temporary directory; it returns
// stdout, and stderr within the error.
func runHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin := helmBinary(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+dir, "HELM_CACHE_HOME="+dir, "HELM_DATA_HOME="+dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// template renders chart as release in namespace ns.
func template(t *testing.T, chart, release, ns string, args ...string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	out, err := runHelm(t, append([]string{"template", release, chartDir(chart), "--namespace", ns}, args...)...)
	if err != nil {
		return nil, err
	}
	return decode([]byte(out))
}

func mustTemplate(t *testing.T, chart, release, ns string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := template(t, chart, release, ns, args...)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// decode splits multi-document YAML into objects, skipping empty ones.
func decode(data []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, fmt.Errorf("%w in:\n%s", err, doc)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

func decodeFile(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decode(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return objs
}

// find returns the one object of kind (and name, unless empty), or fails.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	var got []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind && (name == "" || o.GetName() == name) {
			got = append(got, o)
		}
	}
	if len(got) != 1 {
		t.Fatalf("want one %s %q, found %d among %s", kind, name, len(got), kinds(objs))
	}
	return got[0]
}

func kinds(objs []*unstructured.Unstructured) string {
	var s []string
	for _, o := range objs {
		s = append(s, o.GetKind()+"/"+o.GetName())
	}
	return strings.Join(s, ", ")
}

func convert[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return out
}

// managerContainer returns the Deployment and its manager container.
func managerContainer(t *testing.T, objs []*unstructured.Unstructured) (*appsv1.Deployment, corev1.Container) {
	t.Helper()
	d := convert[appsv1.Deployment](t, find(t, objs, "Deployment", ""))
	if n := len(d.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("want 1 container, got %d", n)
	}
	return d, d.Spec.Template.Spec.Containers[0]
}

// loadArgs parses args with the manager's own flags and loader, exactly as
// cmd/etcdfleet-manager does, so a misspelt flag or bad value fails here.
func loadArgs(t *testing.T, args []string) settings.Config {
	t.Helper()
	for _, s := range settings.Settings(new(settings.Config)) {
		t.Setenv(s.Env(), "") // only the flags count
		os.Unsetenv(s.Env())
	}
	fs := pflag.NewFlagSet("etcdfleet-manager", pflag.ContinueOnError)
	settings.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("the manager rejects the rendered args %q: %v", args, err)
	}
	c, err := settings.Load(fs)
	if err != nil {
		t.Fatalf("the manager rejects the rendered args %q: %v", args, err)
	}
	return c
}

// ---------------------------------------------------------------------------
// Drift from config/

// TestCRDsMatchConfig: each chart's crds/ is a byte-identical copy of its
// config/crd directory (helm installs crds/ first and never deletes them).
// After `make manifests`, copy them again:
//
//	cp config/crd/management/*.yaml charts/etcdfleet/crds/
//	cp config/crd/workload/*.yaml charts/etcdfleet-workload/crds/
func TestCRDsMatchConfig(t *testing.T) {
	for chart, src := range map[string]string{mgmtChart: "management", workloadChart: "workload"} {
		want := readDir(t, filepath.Join(root, "config", "crd", src))
		got := readDir(t, filepath.Join(chartDir(chart), "crds"))
		if len(want) == 0 {
			t.Fatalf("config/crd/%s is empty", src)
		}
		for name, data := range want {
			switch g, ok := got[name]; {
			case !ok:
				t.Errorf("charts/%s/crds/%s is missing: cp config/crd/%s/*.yaml charts/%s/crds/", chart, name, src, chart)
			case !bytes.Equal(g, data):
				t.Errorf("charts/%s/crds/%s differs from config/crd/%s/%s: cp config/crd/%s/*.yaml charts/%s/crds/", chart, name, src, name, src, chart)
			}
		}
		for name := range got {
			if _, ok := want[name]; !ok {
				t.Errorf("charts/%s/crds/%s is not in config/crd/%s: remove it", chart, name, src)
			}
		}
	}
}

func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = data
	}
	return out
}

// ---------------------------------------------------------------------------
// What the manager needs: the specification the RBAC is checked against.

// perm is one verb on a resource (with subresource, "pods/portforward").
type perm struct{ group, resource, verb string }

func (p perm) String() string {
	if p.group == "" {
		return p.verb + " " + p.resource
	}
	return p.verb + " " + p.resource + "." + p.group
}

func perms(group, resource string, verbs ...string) []perm {
	out := make([]perm, 0, len(verbs))
	for _, v := range verbs {
		out = append(out, perm{group, resource, v})
	}
	return out
}

func join(lists ...[]perm) []perm { return slices.Concat(lists...) }

const (
	fleetGroup = "fleet.etcdfleet.io"
	etcdGroup  = "etcd.etcdfleet.io"
)

// mgmtNamespacedPerms are granted in the registration namespace only: the
// labelled-Secret cache (providers/kubeconfigsecret CacheByObject), the
// leader-election Lease and its Events, and the FleetClusters the dashboard
// writes next to their Secrets (fleet/dashboard/sync.go).
var mgmtNamespacedPerms = join(
	perms("", "secrets", "get", "list", "watch"),
	perms("coordination.k8s.io", "leases", "get", "create", "update"),
	perms("", "events", "create", "patch"),
	perms(fleetGroup, "fleetclusters", "create", "update", "delete"),
	perms(fleetGroup, "fleetclusters/status", "update"),
)

// mgmtClusterPerms are granted cluster-wide: the FleetCluster cache is not
// namespaced, and the Fleet is cluster-scoped.
var mgmtClusterPerms = join(
	perms(fleetGroup, "fleetclusters", "get", "list", "watch"),
	perms(fleetGroup, "fleets", "get", "list", "watch", "create"),
	perms(fleetGroup, "fleets/status", "update"),
	perms("", "events", "create", "patch"),
)

// workloadPerms is what the manager does in a workload cluster, from the
// code: memberctl/etcdmember (finalizer patch, status update, Pod and member
// deletes), memberctl/etcdcluster (member create/patch/delete, status update and
// patch), memberctl/component/{pod,pvc,service,pdb}, memberctl/etcd (TLS Secrets
// read by name through the APIReader), the event recorder, the port-forward
// dialer, and the caches of every owned kind. Owner references that block
// deletion need update on the owners' finalizers.
var workloadPerms = join(
	perms(etcdGroup, "etcdclusters", "get", "list", "watch"),
	perms(etcdGroup, "etcdclusters/status", "update"),
	perms(etcdGroup, "etcdclusters/finalizers", "update"),
	perms(etcdGroup, "etcdmembers", "get", "list", "watch", "create", "patch", "delete"),
	perms(etcdGroup, "etcdmembers/status", "update", "patch"),
	perms(etcdGroup, "etcdmembers/finalizers", "update"),
	perms("", "pods", "get", "list", "watch", "create", "patch", "delete"),
	perms("", "pods/portforward", "get", "create"),
	perms("", "persistentvolumeclaims", "get", "list", "watch", "create"),
	perms("", "services", "get", "list", "watch", "create", "patch"),
	perms("policy", "poddisruptionbudgets", "get", "list", "watch", "create", "patch", "delete"),
	perms("", "events", "create", "patch"),
	perms("", "secrets", "get"),
)

// expand lists the permissions of RBAC rules (no wildcards allowed).
func expand(t *testing.T, rules []rbacv1.PolicyRule) []perm {
	t.Helper()
	var out []perm
	for _, r := range rules {
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			t.Errorf("unexpected rule %+v", r)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					if g == "*" || res == "*" || v == "*" {
						t.Errorf("wildcard in rule %+v", r)
					}
					out = append(out, perm{g, res, v})
				}
			}
		}
	}
	return out
}

// samePerms fails unless got and want hold the same permissions.
func samePerms(t *testing.T, what string, got, want []perm) {
	t.Helper()
	set := func(ps []perm) map[perm]bool {
		m := map[perm]bool{}
		for _, p := range ps {
			m[p] = true
		}
		return m
	}
	g, w := set(got), set(want)
	for p := range w {
		if !g[p] {
			t.Errorf("%s: missing %s", what, p)
		}
	}
	for p := range g {
		if !w[p] {
			t.Errorf("%s: grants %s, which the manager does not need", what, p)
		}
	}
}

// TestWorkloadRBACMatchesConfig: config/rbac/workload grants exactly
// workloadPerms, and the workload chart's documented install renders the
// same ServiceAccount, ClusterRole and binding.
func TestWorkloadRBACMatchesConfig(t *testing.T) {
	cfgObjs := configRBAC(t)
	role := convert[rbacv1.ClusterRole](t, find(t, cfgObjs, "ClusterRole", "etcdfleet-workload"))
	samePerms(t, "config/rbac/workload ClusterRole", expand(t, role.Rules), workloadPerms)
	sa := find(t, cfgObjs, "ServiceAccount", saName)
	if sa.GetNamespace() != systemNS {
		t.Errorf("ServiceAccount in %q, want %q", sa.GetNamespace(), systemNS)
	}
	binding := convert[rbacv1.ClusterRoleBinding](t, find(t, cfgObjs, "ClusterRoleBinding", "etcdfleet-workload"))
	wantSubjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: saName, Namespace: systemNS}}
	if binding.RoleRef.Name != role.Name || !slices.Equal(binding.Subjects, wantSubjects) {
		t.Errorf("binding %+v %+v, want ClusterRole %s to %+v", binding.RoleRef, binding.Subjects, role.Name, wantSubjects)
	}
	find(t, cfgObjs, "Namespace", systemNS)
	token := find(t, cfgObjs, "Secret", "etcdfleet-token")
	if token.GetAnnotations()[corev1.ServiceAccountNameKey] != saName {
		t.Errorf("token Secret annotations %v", token.GetAnnotations())
	}

	objs := mustTemplate(t, workloadChart, workloadRelease, systemNS)
	chartRole := convert[rbacv1.ClusterRole](t, find(t, objs, "ClusterRole", "etcdfleet-workload"))
	samePerms(t, "charts/etcdfleet-workload ClusterRole", expand(t, chartRole.Rules), workloadPerms)
	if !equalJSON(t, chartRole.Rules, role.Rules) {
		t.Errorf("the chart's ClusterRole rules differ from config/rbac/workload/cluster_role.yaml (order included)")
	}
	chartBinding := convert[rbacv1.ClusterRoleBinding](t, find(t, objs, "ClusterRoleBinding", "etcdfleet-workload"))
	if chartBinding.RoleRef != binding.RoleRef || !slices.Equal(chartBinding.Subjects, binding.Subjects) {
		t.Errorf("chart binding %+v %+v differs from config/rbac/workload's", chartBinding.RoleRef, chartBinding.Subjects)
	}
	if got := find(t, objs, "ServiceAccount", saName).GetNamespace(); got != systemNS {
		t.Errorf("chart ServiceAccount in %q", got)
	}
	chartToken := find(t, objs, "Secret", "etcdfleet-token")
	if chartToken.GetAnnotations()[corev1.ServiceAccountNameKey] != saName || chartToken.Object["type"] != string(corev1.SecretTypeServiceAccountToken) {
		t.Errorf("chart token Secret %v", chartToken.Object)
	}
	// The provider's pre-flight asks for a subset of what is granted.
	granted := map[perm]bool{}
	for _, p := range workloadPerms {
		granted[p] = true
	}
	for _, c := range app.AccessChecks(operator.PortForward) {
		for _, v := range c.Verbs {
			res := c.Resource
			if c.Subresource != "" {
				res += "/" + c.Subresource
			}
			if !granted[perm{c.Group, res, v}] {
				t.Errorf("the provider's pre-flight checks %s, which the workload RBAC does not grant", c)
			}
		}
	}
	// Without the token Secret.
	objs = mustTemplate(t, workloadChart, workloadRelease, systemNS, "--set", "tokenSecret.create=false")
	for _, o := range objs {
		if o.GetKind() == "Secret" {
			t.Errorf("tokenSecret.create=false still renders Secret %s", o.GetName())
		}
	}
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := yaml.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := yaml.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(ja, jb)
}

// ---------------------------------------------------------------------------
// Lint, render and schema

// nonDefault are non-default values used by the lint and render tests.
var nonDefault = []string{
	"--set", "replicas=2",
	"--set", "limiter.rate=5",
	"--set", "limiter.burst=20",
	"--set", "manager.etcdAccess=direct",
	"--set", "manager.workers=16",
	"--set", "replacement.initialBackoff=500ms",
	"--set", "replacement.window=1h30m",
	"--set", "clusters.probeInterval=20s",
	"--set", "clusters.burst=1000000",
	"--set", "serviceMonitor.enabled=true",
	"--set", "serviceMonitor.labels.release=prometheus",
	"--set", "namespace=registrations",
	"--set", "leaderElection.id=my-lease",
	"--set", "image.tag=v9.9.9",
	"--set", "podAnnotations.example\\.com/a=b",
	"--set", "nodeSelector.kubernetes\\.io/os=linux",
	"--set", "extraArgs={--zap-log-level=debug}",
	"--api-versions", "monitoring.coreos.com/v1",
}

// lintable drops what helm lint cannot take: --api-versions, and so the
// ServiceMonitor that needs it.
func lintable(args []string) []string {
	var out []string
	for i := 0; i < len(args); i += 2 {
		if args[i] == "--api-versions" || strings.HasPrefix(args[i+1], "serviceMonitor.") {
			continue
		}
		out = append(out, args[i], args[i+1])
	}
	return out
}

func TestLint(t *testing.T) {
	for _, c := range []struct {
		chart string
		args  []string
	}{
		{mgmtChart, nil},
		{mgmtChart, lintable(nonDefault)},
		{workloadChart, nil},
		{workloadChart, []string{"--set", "tokenSecret.create=false"}},
	} {
		args := append([]string{"lint", "--strict", chartDir(c.chart), "--namespace", systemNS}, c.args...)
		if out, err := runHelm(t, args...); err != nil {
			t.Errorf("%v\n%s", err, out)
		}
	}
}

// TestDefaults renders the manager chart with its defaults.
func TestDefaults(t *testing.T) {
	objs := mustTemplate(t, mgmtChart, mgmtRelease, systemNS)
	d, c := managerContainer(t, objs)

	// Every setting is passed, and the manager reads back its own defaults,
	// but for the namespace: the release namespace.
	got := loadArgs(t, c.Args)
	want := settings.Default()
	want.Namespace = systemNS
	if got != want {
		t.Errorf("the rendered args load as\n%+v\nwant the manager's defaults\n%+v", got, want)
	}
	flags := map[string]bool{}
	for _, a := range c.Args {
		flags[strings.SplitN(strings.TrimPrefix(a, "--"), "=", 2)[0]] = true
	}
	for _, s := range settings.Settings(new(settings.Config)) {
		if !flags[s.Flag] {
			t.Errorf("setting %s (--%s) is not passed to the manager", s.Key, s.Flag)
		}
	}
	if !slices.Contains(c.Args, "--leader-elect=true") {
		t.Errorf("leader election is not on: %q", c.Args)
	}

	if *d.Spec.Replicas != 1 || d.Namespace != systemNS || d.Spec.Template.Spec.ServiceAccountName != saName {
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

	// RBAC: Secrets only in the registration namespace, exactly as specified.
	role := convert[rbacv1.Role](t, find(t, objs, "Role", mgmtRelease))
	if role.Namespace != systemNS {
		t.Errorf("Role in %q, want the release namespace", role.Namespace)
	}
	samePerms(t, "Role", expand(t, role.Rules), mgmtNamespacedPerms)
	cr := convert[rbacv1.ClusterRole](t, find(t, objs, "ClusterRole", mgmtRelease))
	samePerms(t, "ClusterRole", expand(t, cr.Rules), mgmtClusterPerms)
	rb := convert[rbacv1.RoleBinding](t, find(t, objs, "RoleBinding", mgmtRelease))
	crb := convert[rbacv1.ClusterRoleBinding](t, find(t, objs, "ClusterRoleBinding", mgmtRelease))
	wantSubjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: saName, Namespace: systemNS}}
	if rb.Namespace != systemNS || rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != role.Name || !slices.Equal(rb.Subjects, wantSubjects) {
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

// TestValuesCoverEverySetting: values.yaml has every setting at the helm
// path settings.Settings names, with the manager's default (the registration
// namespace excepted: "" means the release namespace).
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
	for _, s := range settings.Settings(&d) {
		v, ok := lookup(values, s.Helm)
		if !ok {
			t.Errorf("values.yaml has no %s (setting %s)", s.Helm, s.Key)
			continue
		}
		if s.Key == "namespace" {
			if v != "" {
				t.Errorf("values.yaml namespace is %q, want \"\" (the release namespace)", v)
			}
			continue
		}
		if !sameValue(v, s.Value()) {
			t.Errorf("values.yaml %s is %v, but the manager's default for %s is %s", s.Helm, v, s.Key, s.Value())
		}
	}
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
	for _, a := range []string{"--limiter-rate=5", "--limiter-burst=20", "--etcd-access=direct", "--workers=16",
		"--namespace=registrations", "--leader-election-id=my-lease", "--cluster-burst=1000000",
		"--replacement-initial-backoff=500ms", "--replacement-window=1h30m", "--cluster-probe-interval=20s", "--zap-log-level=debug"} {
		if !slices.Contains(c.Args, a) {
			t.Errorf("args %q lack %s", c.Args, a)
		}
	}
	var known []string // the manager's own flags; extraArgs go to zap
	for _, a := range c.Args {
		if !strings.HasPrefix(a, "--zap-") {
			known = append(known, a)
		}
	}
	got := loadArgs(t, known)
	if got.Limiter.Rate != 5 || got.Limiter.Burst != 20 || got.EtcdAccess != "direct" || got.Workers != 16 ||
		got.Namespace != "registrations" || got.LeaderElectionID != "my-lease" || got.Clusters.Burst != 1000000 ||
		got.Replacement.InitialBackoff != 500*time.Millisecond || got.Replacement.Window != 90*time.Minute ||
		got.Clusters.ProbeInterval != 20*time.Second {
		t.Errorf("the manager loads %+v", got)
	}
	if *d.Spec.Replicas != 2 || c.Image != "ghcr.io/etcdfleet/etcdfleet-manager:v9.9.9" {
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
	objs = mustTemplate(t, mgmtChart, mgmtRelease, systemNS, "--set", "metrics.bindAddress=0",
		"--set", "limiter.rate=0.5", "--set", "clusters.qps=12.5")
	_, c = managerContainer(t, objs)
	if got := loadArgs(t, c.Args); got.Limiter.Rate != 0.5 || got.Clusters.QPS != 12.5 || got.MetricsBindAddress != "0" {
		t.Errorf("the manager loads rate %v qps %v metrics %q", got.Limiter.Rate, got.Clusters.QPS, got.MetricsBindAddress)
	}
	if !slices.Contains(c.Args, "--metrics-bind-address=0") || len(c.Ports) != 1 {
		t.Errorf("metrics off: args %q ports %+v", c.Args, c.Ports)
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

// TestSchemaRejectsBadValues: values.schema.json stops bad values before
// anything is rendered.
func TestSchemaRejectsBadValues(t *testing.T) {
	for _, bad := range [][]string{
		{"--set", "manager.etcdAccess=foo"},
		{"--set", "limiter.burst=0"},
		{"--set", "limiter.rate=0"},
		{"--set", "limiter.rate=-1"},
		{"--set", "limiter.rate=0.0"},
		{"--set", "limiter.rate=fast"},
		{"--set", "clusters.qps=-2.5"},
		{"--set", "manager.workers=x"},
		{"--set", "manager.workers=0"},
		{"--set", "manager.workers=1.5"},
		{"--set", "replacement.cap=0"},
		{"--set", "clusters.failureThreshold=0"},
		{"--set", "clusters.qps=0"},
		{"--set-string", "limiter.burst=10"},
		{"--set", "replacement.window=5 minutes"},
		{"--set", "replacement.maxBackoff=5"},
		{"--set", "dashboard.resync=10"},
		{"--set", "clusters.probeTimeout=fast"},
		{"--set", "metrics.bindAddress=8080"},
		{"--set", "probes.bindAddress=0"},
		{"--set", "leaderElection.enabled=yes"},
		{"--set", "leaderElection.id=Not_A_Name"},
		{"--set", "namespace=Bad_Namespace"},
		{"--set", "replicas=-1"},
		{"--set", "image.pullPolicy=Sometimes"},
		{"--set", "limiter.brust=10"}, // a typo
		{"--set", "typo=1"},
		{"--set", "serviceMonitor.interval=often"},
	} {
		_, err := template(t, mgmtChart, mgmtRelease, systemNS, bad...)
		if err == nil {
			t.Errorf("%s is accepted", strings.Join(bad, " "))
		} else if !strings.Contains(err.Error(), "schema") {
			t.Errorf("%s: rejected, but not by the schema: %v", strings.Join(bad, " "), err)
		}
	}
	for _, bad := range [][]string{
		{"--set", "serviceAccount.name=Bad_Name"},
		{"--set", "tokenSecret.create=maybe"},
		{"--set", "typo=1"},
	} {
		if _, err := template(t, workloadChart, workloadRelease, systemNS, bad...); err == nil || !strings.Contains(err.Error(), "schema") {
			t.Errorf("workload chart: %s: want a schema error, got %v", strings.Join(bad, " "), err)
		}
	}
	// Good values of each kind pass.
	for _, good := range [][]string{
		{"--set", "limiter.rate=0.5"},
		{"--set", "clusters.qps=12.5"},
		{"--set", "replacement.window=1h30m", "--set", "replacement.initialBackoff=250ms", "--set-string", "dashboard.resync=0"},
		{"--set", "metrics.bindAddress=0.0.0.0:9090", "--set", "probes.bindAddress=127.0.0.1:9091"},
		{"--set", "replicas=0"},
		{"--set", "global.foo=bar"},
	} {
		if _, err := template(t, mgmtChart, mgmtRelease, systemNS, good...); err != nil {
			t.Errorf("%s is rejected: %v", strings.Join(good, " "), err)
		}
	}
}

// ---------------------------------------------------------------------------
// On real kube-apiservers

// TestOnAPIServer installs both charts on real kube-apiservers (one sandbox:
// a management cluster and a workload cluster) and proves, as the charts'
// ServiceAccounts, that the RBAC allows what the manager needs and nothing
// around it; then runs the manager with exactly those identities through a
// reboot of the workload cluster.
func TestOnAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("needs kube-apiservers (test/sandbox)")
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set, so there is no kube-apiserver to install the charts on. " +
			"Run `make test`, or export KUBEBUILDER_ASSETS=\"$(test/tools/assets.sh)\" before `go test`.")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	// Render first: a template error needs no apiserver.
	mgmtObjs := mustTemplate(t, mgmtChart, mgmtRelease, systemNS)
	// The workload chart goes in as a second release beside the plain
	// manifests of config/rbac/workload, so both are checked for real.
	const wlRelease, wlNS = "wl", "wl-system"
	wlObjs := mustTemplate(t, workloadChart, wlRelease, wlNS)
	cfgObjs := configRBAC(t)

	start := time.Now()
	f, err := sandbox.Start(ctx, sandbox.Options{Clusters: []string{"mgmt", "w1"}, Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	t.Logf("sandbox up in %s", time.Since(start).Round(time.Millisecond))
	mgmt, w1 := f.Cluster("mgmt"), f.Cluster("w1")
	mc, wc := adminClient(t, mgmt.Config), adminClient(t, w1.Config)

	t.Run("install notes", func(t *testing.T) {
		kc := filepath.Join(t.TempDir(), "mgmt.kubeconfig")
		if err := os.WriteFile(kc, mgmt.Kubeconfig, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := runHelm(t, "install", mgmtRelease, chartDir(mgmtChart), "--namespace", systemNS, "--dry-run=client", "--kubeconfig", kc)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			"kubectl create secret generic w1 -n etcdfleet-system --from-file=kubeconfig=./w1.kubeconfig && " +
				"kubectl label secret w1 -n etcdfleet-system etcdfleet.io/cluster-kubeconfig=true",
			"etcdfleetctl register",
			"kubectl get fleetclusters -n etcdfleet-system",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("NOTES lack %q:\n%s", want, out)
			}
		}
		out, err = runHelm(t, "install", workloadRelease, chartDir(workloadChart), "--namespace", systemNS, "--dry-run=client", "--kubeconfig", kc)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "kubectl get secret etcdfleet-token -n etcdfleet-system") {
			t.Errorf("workload NOTES do not show how to read the token:\n%s", out)
		}
	})
	ok := t.Run("management chart", func(t *testing.T) {
		installCRDs(ctx, t, mc, filepath.Join(chartDir(mgmtChart), "crds"))
		createNamespace(ctx, t, mc, systemNS, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
		createNamespace(ctx, t, mc, "other", nil)
		apply(ctx, t, mc, mgmtObjs)
		podSecurity(ctx, t, mc, mgmtObjs)

		sa := saClientset(ctx, t, mgmt, systemNS, saName)
		expectAccess(ctx, t, sa, systemNS, true, mgmtNamespacedPerms...)
		expectAccess(ctx, t, sa, "", true, mgmtClusterPerms...)
		expectAccess(ctx, t, sa, "default", true, perms("", "events", "create")...) // the Fleet's Events
		// No Secret (nor anything else of the registration namespace)
		// elsewhere, and no Secret writes at all.
		var elsewhere []perm // Events are granted everywhere, for the Fleet's
		for _, p := range mgmtNamespacedPerms {
			if p.resource != "events" {
				elsewhere = append(elsewhere, p)
			}
		}
		expectAccess(ctx, t, sa, "other", false, elsewhere...)
		expectAccess(ctx, t, sa, "", false, join(
			perms("", "secrets", "get", "list", "watch"),
			perms("coordination.k8s.io", "leases", "get", "create", "update"),
			perms(fleetGroup, "fleetclusters", "create", "update", "delete"),
			perms(fleetGroup, "fleetclusters/status", "update"),
			perms(fleetGroup, "fleets", "update", "patch", "delete"),
			perms("", "nodes", "get", "list", "delete"),
			perms("apiextensions.k8s.io", "customresourcedefinitions", "create", "update", "delete"),
			perms("rbac.authorization.k8s.io", "clusterroles", "create", "bind", "escalate"),
		)...)
		expectAccess(ctx, t, sa, systemNS, false, join(
			perms("", "secrets", "create", "update", "patch", "delete", "deletecollection"),
			perms("", "configmaps", "get", "list"),
			perms("", "pods", "get", "list"),
			perms("", "serviceaccounts/token", "create"),
			perms("coordination.k8s.io", "leases", "list", "delete"),
			perms(fleetGroup, "fleetclusters", "patch", "deletecollection"),
			perms("rbac.authorization.k8s.io", "roles", "create", "update"),
		)...)

		// Real requests agree.
		mustCreate(ctx, t, mc, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "not-yours"}})
		if _, err := sa.CoreV1().Secrets(systemNS).List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("list Secrets in %s: %v", systemNS, err)
		}
		forbidden(t, "get a Secret in another namespace", ignore(sa.CoreV1().Secrets("other").Get(ctx, "not-yours", metav1.GetOptions{})))
		forbidden(t, "list Secrets cluster-wide", ignore(sa.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})))
		forbidden(t, "delete a Node", sa.CoreV1().Nodes().Delete(ctx, "node-0", metav1.DeleteOptions{}))
	})
	ok = t.Run("workload RBAC", func(t *testing.T) {
		installCRDs(ctx, t, wc, filepath.Join(chartDir(workloadChart), "crds"))
		createNamespace(ctx, t, wc, wlNS, nil)
		createNamespace(ctx, t, wc, "etcd", nil)
		apply(ctx, t, wc, cfgObjs) // creates etcdfleet-system
		apply(ctx, t, wc, wlObjs)
		for _, ns := range []string{systemNS, wlNS} {
			sa := saClientset(ctx, t, w1, ns, saName)
			for _, where := range []string{"", "etcd"} {
				expectAccess(ctx, t, sa, where, true, workloadPerms...)
				expectAccess(ctx, t, sa, where, false, join(
					perms("", "secrets", "list", "watch", "create", "update", "patch", "delete"),
					perms("", "configmaps", "get", "list", "watch", "create", "update", "delete"),
					perms("apps", "deployments", "get", "list", "create", "update", "delete"),
					perms("apps", "statefulsets", "get", "create"),
					perms(etcdGroup, "etcdclusters", "create", "update", "patch", "delete"),
					perms(etcdGroup, "etcdmembers", "update", "deletecollection"),
					perms("", "pods", "update", "deletecollection"),
					perms("", "pods/exec", "create", "get"),
					perms("", "pods/log", "get"),
					perms("", "pods/eviction", "create"),
					perms("", "persistentvolumeclaims", "update", "patch", "delete"),
					perms("", "services", "update", "delete"),
					perms("policy", "poddisruptionbudgets", "update"),
					perms("", "serviceaccounts/token", "create"),
					perms("rbac.authorization.k8s.io", "roles", "create", "bind"),
				)...)
			}
			expectAccess(ctx, t, sa, "", false, join(
				perms("", "nodes", "get", "list", "delete"),
				perms("", "namespaces", "create", "delete"),
				perms("apiextensions.k8s.io", "customresourcedefinitions", "create", "update", "delete"),
				perms("rbac.authorization.k8s.io", "clusterroles", "create", "bind", "escalate"),
			)...)
			// The provider's own pre-flight checks, as it asks them.
			var pre []perm
			for _, c := range app.AccessChecks(operator.PortForward) {
				res := c.Resource
				if c.Subresource != "" {
					res += "/" + c.Subresource
				}
				pre = append(pre, perms(c.Group, res, c.Verbs...)...)
			}
			expectAccess(ctx, t, sa, "", true, pre...)

			mustCreate(ctx, t, wc, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "etcd", Name: "tls-" + ns}})
			if _, err := sa.CoreV1().Secrets("etcd").Get(ctx, "tls-"+ns, metav1.GetOptions{}); err != nil {
				t.Errorf("%s: get a TLS Secret by name: %v", ns, err)
			}
			forbidden(t, ns+": list Secrets", ignore(sa.CoreV1().Secrets("etcd").List(ctx, metav1.ListOptions{})))
			forbidden(t, ns+": list Secrets cluster-wide", ignore(sa.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})))
			forbidden(t, ns+": list ConfigMaps", ignore(sa.CoreV1().ConfigMaps("etcd").List(ctx, metav1.ListOptions{})))
			forbidden(t, ns+": list Deployments", ignore(sa.AppsV1().Deployments("etcd").List(ctx, metav1.ListOptions{})))
		}
	}) && ok
	if !ok {
		return
	}
	t.Run("manager with the charts' identities heals a reboot", func(t *testing.T) {
		managerHealsReboot(ctx, t, f, mc, wc)
	})
}

// configRBAC reads config/rbac/workload as kustomization.yaml lists it.
func configRBAC(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	dir := filepath.Join(root, "config", "rbac", "workload")
	kust := struct {
		Resources []string `json:"resources"`
	}{}
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &kust); err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range kust.Resources {
		objs = append(objs, decodeFile(t, filepath.Join(dir, r))...)
	}
	return objs
}

func adminClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	s := app.Scheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustCreate(ctx context.Context, t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(ctx, obj); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
}

func createNamespace(ctx context.Context, t *testing.T, c client.Client, name string, labels map[string]string) {
	t.Helper()
	mustCreate(ctx, t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})
}

// installCRDs creates the CRDs of dir, as helm does with crds/, and waits
// until they are Established.
func installCRDs(ctx context.Context, t *testing.T, c client.Client, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		for _, o := range decodeFile(t, filepath.Join(dir, e.Name())) {
			if o.GetKind() != "CustomResourceDefinition" {
				t.Fatalf("%s holds a %s", e.Name(), o.GetKind())
			}
			if err := c.Create(ctx, o); err != nil {
				t.Fatalf("create CRD %s: %v", o.GetName(), err)
			}
			names = append(names, o.GetName())
		}
	}
	for _, name := range names {
		eventually(ctx, t, 30*time.Second, "CRD "+name+" Established", func() error {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, types.NamespacedName{Name: name}, crd); err != nil {
				return err
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return nil
				}
			}
			return fmt.Errorf("conditions %+v", crd.Status.Conditions)
		})
	}
}

// apply server-side applies objs, as `helm install` would create them.
func apply(ctx context.Context, t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	// Namespaces first, then the rest in order.
	sorted := slices.Clone(objs)
	sort.SliceStable(sorted, func(i, j int) bool {
		return sorted[i].GetKind() == "Namespace" && sorted[j].GetKind() != "Namespace"
	})
	for _, o := range sorted {
		o = o.DeepCopy()
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("chart-test"), client.ForceOwnership); err != nil {
			t.Fatalf("apply %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
}

// podSecurity proves, with a server-side dry run in a namespace enforcing
// the restricted Pod Security Standard, that the Deployment's Pod would be
// admitted, and that the namespace does enforce it.
func podSecurity(ctx context.Context, t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	d, _ := managerContainer(t, objs)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: "pod-security-check", Labels: d.Spec.Template.Labels},
		Spec: *d.Spec.Template.Spec.DeepCopy()}
	if err := c.Create(ctx, pod.DeepCopy(), client.DryRunAll); err != nil {
		t.Errorf("the manager's Pod is not admitted under the restricted Pod Security Standard: %v", err)
	}
	priv := pod.DeepCopy()
	priv.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptrTo(true)
	if err := c.Create(ctx, priv, client.DryRunAll); !apierrors.IsForbidden(err) {
		t.Errorf("namespace %s does not enforce the restricted standard (a Pod allowing privilege escalation got %v)", d.Namespace, err)
	}
}

func ptrTo[T any](v T) *T { return &v }

// saClientset acts as namespace/name with a freshly minted token.
func saClientset(ctx context.Context, t *testing.T, c *sandbox.Cluster, namespace, name string) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(saConfig(ctx, t, c, namespace, name))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func saConfig(ctx context.Context, t *testing.T, c *sandbox.Cluster, namespace, name string) *rest.Config {
	t.Helper()
	kc, err := c.ServiceAccountKubeconfig(ctx, namespace, name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 500, 1000 // hundreds of access reviews
	return cfg
}

// expectAccess asks a SelfSubjectAccessReview for each permission in
// namespace ns ("" is cluster-wide) and fails unless each is allowed (or
// denied) as wanted.
func expectAccess(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, want bool, ps ...perm) {
	t.Helper()
	where := "cluster-wide"
	if ns != "" {
		where = "in namespace " + ns
	}
	type result struct {
		allowed bool
		reason  string
		err     error
	}
	results := make([]result, len(ps))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			res, sub, _ := strings.Cut(p.resource, "/")
			r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: ns, Verb: p.verb, Group: p.group, Resource: res, Subresource: sub,
				}},
			}, metav1.CreateOptions{})
			if err != nil {
				results[i] = result{err: err}
				return
			}
			results[i] = result{allowed: r.Status.Allowed, reason: r.Status.Reason}
		}()
	}
	wg.Wait()
	for i, p := range ps {
		switch r := results[i]; {
		case r.err != nil:
			t.Errorf("access review %s %s: %v", p, where, r.err)
		case r.allowed != want && want:
			t.Errorf("the ServiceAccount may not %s %s, but needs to", p, where)
		case r.allowed != want:
			t.Errorf("the ServiceAccount may %s %s (%s), but must not", p, where, r.reason)
		}
	}
}

func ignore[T any](_ T, err error) error { return err }

func forbidden(t *testing.T, what string, err error) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s: want Forbidden, got %v", what, err)
	}
}

// eventually polls fn until it returns nil, or fails with its last error.
func eventually(ctx context.Context, t *testing.T, timeout time.Duration, what string, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// syncBuffer collects the manager's log.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// managerHealsReboot runs the fleet manager in process as the management
// chart's ServiceAccount, with w1 registered by a kubeconfig of the
// config/rbac/workload ServiceAccount, and checks that it bootstraps an
// EtcdCluster, heals a reboot of every node, and never meets a Forbidden.
func managerHealsReboot(ctx context.Context, t *testing.T, f *sandbox.Fleet, mc, wc client.Client) {
	mgmt, w1 := f.Cluster("mgmt"), f.Cluster("w1")
	kc, err := w1.ServiceAccountKubeconfig(ctx, systemNS, saName, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(ctx, t, mc, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: systemNS, Name: "w1", Labels: map[string]string{fleetv1.RegistrationLabel: "true"}},
		Data:       map[string][]byte{fleetv1.KubeconfigKey: kc},
	})

	logs := &syncBuffer{}
	logger := zap.New(zap.WriteTo(logs), zap.UseDevMode(true))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger) // client-go's reflectors report Forbidden lists and watches through klog
	defer klog.ClearLogger()
	defer func() {
		// Whatever else happened, a Forbidden means missing RBAC.
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "forbidden") {
				t.Errorf("the manager met a Forbidden: %s", l)
				break
			}
		}
		if t.Failed() {
			out := logs.String()
			if len(out) > 20000 {
				out = "...\n" + out[len(out)-20000:]
			}
			t.Logf("manager log:\n%s", out)
		}
	}()
	c := settings.Default()
	c.Namespace = systemNS
	c.MetricsBindAddress, c.HealthProbeBindAddress = "0", "0"
	c.LeaderElection = true // the chart's default: the Lease is part of what is checked
	cfg := saConfig(ctx, t, mgmt, systemNS, saName)
	cfg.QPS, cfg.Burst = 0, 0 // the manager's own defaults, as in the Deployment
	fm, err := app.New(cfg, c)
	if err != nil {
		t.Fatal(err)
	}
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- fm.Start(mctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()

	const ns, name = "etcd", "e"
	if err := wc.Create(ctx, e2eutil.NewEtcdCluster(ns, name, 3, false)); err != nil {
		t.Fatal(err)
	}
	available := func() error {
		ec := &etcdv1.EtcdCluster{}
		if err := wc.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ec); err != nil {
			return err
		}
		if !e2eutil.Available(ec) {
			return fmt.Errorf("not Available: ready %d, conditions %+v", ec.Status.ReadyMembers, ec.Status.Conditions)
		}
		return nil
	}
	start := time.Now()
	eventually(ctx, t, 2*time.Minute, "bootstrap", available)
	t.Logf("EtcdCluster Available in %s", time.Since(start).Round(time.Millisecond))
	eventually(ctx, t, 30*time.Second, "FleetCluster w1 Connected", func() error {
		fc := &fleetv1.FleetCluster{}
		if err := mc.Get(ctx, types.NamespacedName{Namespace: systemNS, Name: "w1"}, fc); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(fc.Status.Conditions, fleetv1.ConditionConnected) {
			return fmt.Errorf("conditions %+v", fc.Status.Conditions)
		}
		if refs := fc.OwnerReferences; len(refs) != 1 || refs[0].Kind != "Secret" || refs[0].Name != "w1" {
			return fmt.Errorf("owner references %+v, want the Secret", refs)
		}
		return mc.Get(ctx, types.NamespacedName{Name: fleetv1.FleetName}, &fleetv1.Fleet{})
	})

	before := podUIDs(ctx, t, wc, ns)
	if len(before) != 3 {
		t.Fatalf("want 3 member Pods, got %v", before)
	}
	start = time.Now()
	if err := w1.Reboot(ctx, kubelet.RebootOptions{Phase: kubelet.Alternate, Outage: time.Second}); err != nil {
		t.Fatal(err)
	}
	eventually(ctx, t, 2*time.Minute, "heal", func() error {
		now := podUIDs(ctx, t, wc, ns)
		for n, uid := range before {
			if got, ok := now[n]; !ok || got == uid {
				return fmt.Errorf("Pod %s not replaced and Ready yet", n)
			}
		}
		return available()
	})
	t.Logf("healed the reboot in %s", time.Since(start).Round(time.Millisecond))

	lease := &coordinationv1.Lease{}
	if err := mc.Get(ctx, types.NamespacedName{Namespace: systemNS, Name: c.LeaderElectionID}, lease); err != nil {
		t.Errorf("leader-election Lease: %v", err)
	} else if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Errorf("the Lease has no holder: %+v", lease.Spec)
	}
}

// podUIDs maps the Ready Pods of ns to their UIDs.
func podUIDs(ctx context.Context, t *testing.T, c client.Client, ns string) map[string]types.UID {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, p := range pods.Items {
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
				out[p.Name] = p.UID
			}
		}
	}
	return out
}
