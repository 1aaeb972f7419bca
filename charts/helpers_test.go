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
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/settings"
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
	// regNS is the manager chart's default registration namespace.
	regNS = fleetv1.DefaultRegistrationNamespace
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

// managerConfig loads the manager's settings as the rendered Deployment
// gives them: its args (the manager's own flags; extraArgs for zap are
// left out) with the config file they name, read from the ConfigMap the
// Pod mounts there. It parses them with the manager's own flags and
// loader, exactly as cmd/etcdfleet-manager does, so a misspelt key, flag
// or bad value fails here.
func managerConfig(t *testing.T, objs []*unstructured.Unstructured) settings.Config {
	t.Helper()
	for _, s := range settings.Settings(new(settings.Config)) {
		t.Setenv(s.Env(), "") // only the chart's file and flags count
		os.Unsetenv(s.Env())
	}
	data, path := configFile(t, objs)
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	_, c := managerContainer(t, objs)
	var args []string
	for _, a := range c.Args {
		switch {
		case a == "--config="+path:
			args = append(args, "--config="+file)
		case !strings.HasPrefix(a, "--zap-"):
			args = append(args, a)
		}
	}
	fs := pflag.NewFlagSet("etcdfleet-manager", pflag.ContinueOnError)
	settings.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("the manager rejects the rendered args %q: %v", c.Args, err)
	}
	cfg, err := settings.Load(fs)
	if err != nil {
		t.Fatalf("the manager rejects the rendered config %q:\n%s\n%v", c.Args, data, err)
	}
	return cfg
}

// configFile returns the manager's config file as rendered and the path
// the manager is told to read it from (--config), after checking that the
// Pod mounts the chart's ConfigMap there.
func configFile(t *testing.T, objs []*unstructured.Unstructured) (data, path string) {
	t.Helper()
	d, c := managerContainer(t, objs)
	for _, a := range c.Args {
		if p, ok := strings.CutPrefix(a, "--config="); ok {
			path = p
		}
	}
	if path == "" {
		t.Fatalf("args %q name no --config", c.Args)
	}
	vols := map[string]corev1.Volume{}
	for _, v := range d.Spec.Template.Spec.Volumes {
		vols[v.Name] = v
	}
	for _, m := range c.VolumeMounts {
		v, ok := vols[m.Name]
		if !ok || v.ConfigMap == nil || filepath.Dir(path) != m.MountPath {
			continue
		}
		cm := convert[corev1.ConfigMap](t, find(t, objs, "ConfigMap", v.ConfigMap.Name))
		if data, ok := cm.Data[filepath.Base(path)]; ok {
			return data, path
		}
	}
	t.Fatalf("--config=%s is not a key of a ConfigMap mounted there (mounts %+v, volumes %+v)", path, c.VolumeMounts, d.Spec.Template.Spec.Volumes)
	return "", ""
}

// volume returns the Pod's volume name, or fails.
func volume(t *testing.T, d *appsv1.Deployment, name string) corev1.Volume {
	t.Helper()
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("no volume %s among %+v", name, d.Spec.Template.Spec.Volumes)
	return corev1.Volume{}
}
