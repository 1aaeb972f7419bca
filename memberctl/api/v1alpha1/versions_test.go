package v1alpha1_test

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// TestSupportedVersionsAreTheCRDEnum: the generated EtcdCluster CRD admits
// exactly SupportedVersions. A kubebuilder marker cannot read a Go table, so
// the enum repeats it; this keeps the two equal (the admission policy's
// images are generated from the table, so an EtcdCluster the CRD admits
// always gets Pods the policy admits).
func TestSupportedVersionsAreTheCRDEnum(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "..", "..", "config", "crd", "workload", "etcd.etcdfleet.io_etcdclusters.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	crd := map[string]any{}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	versions, _, _ := unstructured.NestedSlice(crd, "spec", "versions")
	if len(versions) == 0 {
		t.Fatalf("%s has no versions", path)
	}
	for _, v := range versions {
		enum, _, err := unstructured.NestedSlice(v.(map[string]any), "schema", "openAPIV3Schema", "properties", "spec", "properties", "version", "enum")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range enum {
			s, _ := e.(string) // a number here would be a marker value written unquoted
			got = append(got, s)
		}
		if !slices.Equal(got, v1alpha1.SupportedVersions) {
			t.Errorf("spec.version's enum is %q, SupportedVersions %q: edit the marker of EtcdClusterSpec.Version and run make manifests",
				got, v1alpha1.SupportedVersions)
		}
	}
}
