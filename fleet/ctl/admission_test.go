package ctl_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/etcdfleet/etcdfleet/fleet/ctl"
)

// allowedS3Endpoints returns the allowedS3Endpoints variable of each
// policy of manifests that has it, by policy name.
func allowedS3Endpoints(t *testing.T, manifests [][]byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range manifests {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(m, &u.Object); err != nil {
			t.Fatal(err)
		}
		vars, _, _ := unstructured.NestedSlice(u.Object, "spec", "variables")
		for _, v := range vars {
			if vm := v.(map[string]any); vm["name"] == "allowedS3Endpoints" {
				out[u.GetName()] = vm["expression"].(string)
			}
		}
	}
	return out
}

// TestAllowedS3Endpoints: --allowed-s3-endpoints reaches both references
// policies as a CEL list, and only hosts, IPs and CIDRs get in (nothing
// that could close the quote).
func TestAllowedS3Endpoints(t *testing.T) {
	m, err := ctl.AdmissionManifests(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := allowedS3Endpoints(t, m); len(got) != 2 || got["etcdfleet-workload-cluster-references"] != "[]" || got["etcdfleet-workload-snapshot-references"] != "[]" {
		t.Errorf("default: %v, want [] in both references policies", got)
	}
	m, err = ctl.AdmissionManifests(nil, []string{"127.0.0.2", "fe80::/10", "minio.storage.svc", "::1"})
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range allowedS3Endpoints(t, m) {
		if got != "['127.0.0.2', 'fe80::/10', 'minio.storage.svc', '::1']" {
			t.Errorf("%s: allowedS3Endpoints %s", name, got)
		}
	}
	for _, bad := range []string{"x' || true || '", "http://127.0.0.1:8333", "127.0.0.1:8333", "MinIO.local", "a b", ""} {
		if _, err := ctl.AdmissionManifests(nil, []string{bad}); err == nil || !strings.Contains(err.Error(), "--allowed-s3-endpoints") {
			t.Errorf("%q: err = %v, want it refused", bad, err)
		}
	}
}
