// Command gen writes the workload RBAC rendered from
// memberctl/workload.Permissions, the one table of what etcdfleet-manager
// may do in a workload cluster: config/rbac/workload/cluster_role.yaml and
// the workload chart's templates/_rules.tpl; the etcd images of
// config/rbac/workload/admission_policy.yaml, from
// memberctl/api/v1alpha1.SupportedVersions; and the chart's
// templates/admissionpolicy.yaml rendered from that policy
// (config.GenerateAdmissionPolicy); and the opt-in token rotation rights
// (config/rbac/workload/token_rotation.yaml and the chart's
// templates/_tokenrotation.tpl) from memberctl/workload/rotation.go. `make manifests` runs it from the
// repository root; `make verify-generated` fails when its output is not
// committed.
package main

import (
	"flag"
	"log"
	"os"
	"path/filepath"

	"github.com/etcdfleet/etcdfleet/config"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

func main() {
	root := flag.String("root", ".", "the repository root")
	flag.Parse()
	// From disk, not config's embedded copy: that was compiled before this
	// run, so it would lag one run behind a changed version table.
	policyPath := filepath.Join(*root, "config", config.AdmissionPolicyFile)
	src, err := os.ReadFile(policyPath)
	if err != nil {
		log.Fatal(err)
	}
	policy, chartPolicy, err := config.GenerateAdmissionPolicy(src)
	if err != nil {
		log.Fatal(err)
	}
	for path, data := range map[string][]byte{
		"config/rbac/workload/cluster_role.yaml":                   workload.ClusterRoleYAML(),
		"config/" + config.AdmissionPolicyFile:                     policy,
		"charts/etcdfleet-workload/templates/_rules.tpl":           workload.ChartRulesTemplate(),
		"charts/etcdfleet-workload/templates/admissionpolicy.yaml": chartPolicy,
		"config/rbac/workload/token_rotation.yaml":                 workload.TokenRotationYAML(),
		"charts/etcdfleet-workload/templates/_tokenrotation.tpl":   workload.ChartTokenRotationTemplate(),
	} {
		if err := os.WriteFile(filepath.Join(*root, path), data, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}
