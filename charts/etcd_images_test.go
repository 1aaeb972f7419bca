package charts_test

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/etcdfleet/etcdfleet/config"
	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component/pod"
)

// etcd runs at the versions etcdfleet supports only (review finding L10):
// the images memberctl builds are the ones the policy admits by name.

// TestBuiltEtcdImagesAreAdmitted: for every supported version the image
// memberctl builds is one the admission policy admits by name, so the
// policy's tag format (v<version>) follows the builder's.
func TestBuiltEtcdImagesAreAdmitted(t *testing.T) {
	for _, v := range etcdv1.SupportedVersions {
		m := &etcdv1.EtcdMember{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m-0"},
			Spec: etcdv1.EtcdMemberSpec{ClusterName: "m", Version: v}}
		var image string
		for _, c := range pod.Build(m, pod.BuildOptions{}).Spec.Containers {
			if c.Name == pod.ContainerName {
				image = c.Image
			}
		}
		if !slices.Contains(config.EtcdImages(), image) {
			t.Errorf("version %s: memberctl runs %s, which the policy's etcdImages %q do not admit", v, image, config.EtcdImages())
		}
	}
	if config.EtcdImageRepositories[0] != pod.DefaultImageRepository {
		t.Errorf("the policy's first etcd repository is %s, memberctl's %s", config.EtcdImageRepositories[0], pod.DefaultImageRepository)
	}
}

// TestWorkloadChartImages: the workload chart admits etcdfleet's image by
// repository and etcd by supported version only; listing an etcd
// repository, which would admit its every tag, fails the install.
func TestWorkloadChartImages(t *testing.T) {
	objs := mustTemplate(t, workloadChart, workloadRelease, systemNS, "--set", "watchNamespaces={etcd}")
	for _, name := range []string{workloadRelease + "-pods", workloadRelease + "-jobs"} {
		vars, _, _ := unstructured.NestedSlice(find(t, objs, "ValidatingAdmissionPolicy", name).Object, "spec", "variables")
		got := map[string]string{}
		for _, v := range vars {
			vm := v.(map[string]any)
			got[vm["name"].(string)], _ = vm["expression"].(string)
		}
		if got["allowedImages"] != "['ghcr.io/etcdfleet/etcdfleet-manager']" {
			t.Errorf("%s allowedImages %s, want etcdfleet's repository only", name, got["allowedImages"])
		}
		for _, v := range etcdv1.SupportedVersions {
			if !strings.Contains(got["etcdImages"], "'quay.io/coreos/etcd:v"+v+"'") {
				t.Errorf("%s etcdImages %s lack %s", name, got["etcdImages"], v)
			}
		}
	}
	for _, repo := range config.EtcdImageRepositories {
		_, err := template(t, workloadChart, workloadRelease, systemNS, "--set", "watchNamespaces={etcd}",
			"--set", "admissionPolicy.allowedImages={ghcr.io/etcdfleet/etcdfleet-manager,"+repo+"}")
		if err == nil || !strings.Contains(err.Error(), repo+" would admit every tag of etcd") {
			t.Errorf("allowedImages with %s: want a refusal, got %v", repo, err)
		}
	}
}
