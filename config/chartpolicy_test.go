package config

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// TestAdmissionPolicyIsGenerated: the admission policy etcdfleetctl applies
// and the workload chart's copy hold the etcd images of the supported
// versions table. make verify-generated says the same, but only where it
// runs; this fails in any go test after the table changed without `make
// manifests`.
func TestAdmissionPolicyIsGenerated(t *testing.T) {
	src, err := fs.ReadFile(workloadFS, AdmissionPolicyFile)
	if err != nil {
		t.Fatal(err)
	}
	policy, chart, err := GenerateAdmissionPolicy(src)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(policy, src) {
		t.Errorf("%s is stale: its etcdImages are not %q; run make manifests", AdmissionPolicyFile, EtcdImages())
	}
	onDisk, err := os.ReadFile(filepath.Join("..", "charts", "etcdfleet-workload", "templates", "admissionpolicy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(chart, onDisk) {
		t.Error("the workload chart's admissionpolicy.yaml is stale; run make manifests")
	}
	want := `expression: "` + celList(EtcdImages()) + `"`
	if n := strings.Count(string(src), want); n != 2 {
		t.Errorf("%d policies admit %s, want the Pods and Jobs policies", n, want)
	}
}

// TestEtcdImages: exact tags of the official repositories, one per
// supported version; nothing older.
func TestEtcdImages(t *testing.T) {
	images := EtcdImages()
	if len(images) != len(EtcdImageRepositories)*len(etcdv1.SupportedVersions) {
		t.Errorf("EtcdImages %q", images)
	}
	for _, v := range etcdv1.SupportedVersions {
		if !slices.Contains(images, "quay.io/coreos/etcd:v"+v) {
			t.Errorf("EtcdImages %q lack quay.io/coreos/etcd:v%s", images, v)
		}
	}
	for _, old := range []string{"quay.io/coreos/etcd:v3.3.0", "quay.io/coreos/etcd:v3.4.13", "quay.io/coreos/etcd", "quay.io/coreos/etcd:latest"} {
		if slices.Contains(images, old) {
			t.Errorf("EtcdImages admit %s", old)
		}
	}
}

// TestGenerateAdmissionPolicyNeedsBothVariables: a policy file that lost its
// etcdImages variable (or the Jobs policy's) is an error, not a policy that
// silently keeps an old list.
func TestGenerateAdmissionPolicyNeedsBothVariables(t *testing.T) {
	src, err := fs.ReadFile(workloadFS, AdmissionPolicyFile)
	if err != nil {
		t.Fatal(err)
	}
	one := strings.Replace(string(src), "    - name: etcdImages\n", "    - name: otherImages\n", 1)
	if _, _, err := GenerateAdmissionPolicy([]byte(one)); err == nil || !strings.Contains(err.Error(), "found 1 etcdImages") {
		t.Errorf("want an error naming the count of etcdImages, got %v", err)
	}
}
