package charts_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

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
