package ctl

import (
	"encoding/json"
	"fmt"
	"net"
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

// AdmissionManifests are the workload manifests register applies
// (config.WorkloadManifests) with the admission policies' allowedImages
// set to images and allowedS3Endpoints to endpoints (each empty: config's
// defaults). The e2e suites install with it, the way register does.
func AdmissionManifests(images, endpoints []string) ([][]byte, error) {
	m, err := withAllowedImages(config.WorkloadManifests(), images)
	if err != nil {
		return nil, err
	}
	return withAllowedS3Endpoints(m, endpoints)
}

// s3Host is a DNS name, lowercase, as --allowed-s3-endpoints takes one.
var s3Host = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?[.])*[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// withAllowedS3Endpoints returns manifests with the policies'
// allowedS3Endpoints variable (the EtcdCluster and EtcdSnapshot references
// policies) set to hosts: names or IPs, matched exactly, and CIDRs, which
// the policies admit as S3 endpoints although they refuse loopback,
// link-local, unspecified and metadata addresses by default. Each entry is
// checked to be one of those, which also keeps quotes out of the CEL list.
func withAllowedS3Endpoints(manifests [][]byte, hosts []string) ([][]byte, error) {
	if len(hosts) == 0 {
		return manifests, nil
	}
	quoted := make([]string, 0, len(hosts))
	for _, h := range hosts {
		_, _, cidrErr := net.ParseCIDR(h)
		if h != strings.ToLower(h) || (cidrErr != nil && net.ParseIP(h) == nil && !s3Host.MatchString(h)) {
			return nil, fmt.Errorf("--allowed-s3-endpoints: %q is not a lowercase host name, an IP address or a CIDR (such as 127.0.0.2 or fe80::/10; no scheme or port)", h)
		}
		quoted = append(quoted, "'"+h+"'")
	}
	return setPolicyVariable(manifests, "allowedS3Endpoints", "["+strings.Join(quoted, ", ")+"]")
}

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
	return setPolicyVariable(manifests, "allowedImages", "["+strings.Join(quoted, ", ")+"]")
}

// setPolicyVariable sets variable name to expression in every
// ValidatingAdmissionPolicy of manifests that has it.
func setPolicyVariable(manifests [][]byte, name, expression string) ([][]byte, error) {
	out := make([][]byte, 0, len(manifests))
	for _, m := range manifests {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(m, &u.Object); err != nil {
			return nil, err
		}
		if u.GetKind() == "ValidatingAdmissionPolicy" && hasVariable(u, name) {
			if err := setVariable(u, name, expression); err != nil {
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
