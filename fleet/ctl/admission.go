package ctl

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/etcdfleet/etcdfleet/config"
)

// imageRepository is what --allowed-images accepts: a repository, with an
// optional registry port, no tag (the chart's values schema says the same).
var imageRepository = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]*[a-z0-9])?(:[0-9]+)?(/[a-z0-9]([a-z0-9._-]*[a-z0-9])?)*$`)

// withAllowedImages returns manifests with every policy's allowedImages
// variable (the Pods and Jobs policies) set to repos (none: unchanged, config/rbac/workload's defaults).
// Every tag of those repositories is admitted, so etcd's own are refused:
// the policy admits them at the supported versions only (its etcdImages,
// which this leaves alone), and any tag would include old ones that ship
// /bin/sh.
// The list lives in the policy rather than in a param object because a
// missing param would refuse every Pod in the cluster (see the policy).
func withAllowedImages(manifests [][]byte, repos []string) ([][]byte, error) {
	if len(repos) == 0 {
		return manifests, nil
	}
	quoted := make([]string, 0, len(repos))
	for _, r := range repos {
		if !imageRepository.MatchString(r) {
			return nil, fmt.Errorf("--allowed-images: %q is not an image repository (such as registry.example.com/etcdfleet, without a tag)", r)
		}
		if slices.Contains(config.EtcdImageRepositories, r) {
			return nil, fmt.Errorf("--allowed-images: %s would admit every tag of etcd, old ones that ship /bin/sh included; "+
				"the admission policy admits etcd's official images at the versions etcdfleet supports without it", r)
		}
		quoted = append(quoted, "'"+r+"'")
	}
	out := make([][]byte, 0, len(manifests))
	for _, m := range manifests {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(m, &u.Object); err != nil {
			return nil, err
		}
		if u.GetKind() == "ValidatingAdmissionPolicy" && hasVariable(u, "allowedImages") {
			if err := setVariable(u, "allowedImages", "["+strings.Join(quoted, ", ")+"]"); err != nil {
				return nil, err
			}
			b, err := json.Marshal(u.Object)
			if err != nil {
				return nil, err
			}
			m = b
		}
		out = append(out, m)
	}
	return out, nil
}

func setVariable(u *unstructured.Unstructured, name, expression string) error {
	vars, _, err := unstructured.NestedSlice(u.Object, "spec", "variables")
	if err != nil {
		return err
	}
	for _, v := range vars {
		if vm, ok := v.(map[string]any); ok && vm["name"] == name {
			vm["expression"] = expression
			return unstructured.SetNestedSlice(u.Object, vars, "spec", "variables")
		}
	}
	return fmt.Errorf("policy %s has no variable %s", u.GetName(), name) // caught by the ctl tests
}

func hasVariable(u *unstructured.Unstructured, name string) bool {
	vars, _, _ := unstructured.NestedSlice(u.Object, "spec", "variables")
	for _, v := range vars {
		if vm, ok := v.(map[string]any); ok && vm["name"] == name {
			return true
		}
	}
	return false
}
