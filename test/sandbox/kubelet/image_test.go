package kubelet

import "testing"

// TestImageMinor: the kubelet picks an etcd binary by the image tag's
// minor version; a tag that is no version keeps the default binary.
func TestImageMinor(t *testing.T) {
	for image, want := range map[string]string{
		"quay.io/coreos/etcd:v3.6.16":         "3.6",
		"quay.io/coreos/etcd:v3.7.3":          "3.7",
		"registry.k8s.io/etcd:3.6.15-0":       "3.6",
		"localhost:5000/etcd:v3.7.1":          "3.7",
		"quay.io/coreos/etcd:v3.7.3@sha256:0": "3.7",
		"quay.io/coreos/etcd":                 "",
		"quay.io/coreos/etcd:latest":          "",
		"quay.io/coreos/etcd:vX.6":            "",
	} {
		if got := imageMinor(image); got != want {
			t.Errorf("imageMinor(%q) = %q, want %q", image, got, want)
		}
	}
}
