// Command gen writes the workload RBAC rendered from
// memberctl/workload.Permissions, the one table of what etcdfleet-manager
// may do in a workload cluster: config/rbac/workload/cluster_role.yaml and
// the workload chart's templates/_rules.tpl; and the chart's
// templates/admissionpolicy.yaml rendered from
// config/rbac/workload/admission_policy.yaml (config.ChartAdmissionPolicy). `make manifests` runs it from
// the repository root; `make verify-generated` fails when its output is not
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
	policies, err := config.ChartAdmissionPolicy()
	if err != nil {
		log.Fatal(err)
	}
	for path, data := range map[string][]byte{
		"config/rbac/workload/cluster_role.yaml":                   workload.ClusterRoleYAML(),
		"charts/etcdfleet-workload/templates/_rules.tpl":           workload.ChartRulesTemplate(),
		"charts/etcdfleet-workload/templates/admissionpolicy.yaml": policies,
	} {
		if err := os.WriteFile(filepath.Join(*root, path), data, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}
