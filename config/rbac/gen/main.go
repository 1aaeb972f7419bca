// Command gen writes the workload RBAC rendered from
// memberctl/workload.Permissions, the one table of what etcdfleet-manager
// may do in a workload cluster: config/rbac/workload/cluster_role.yaml and
// the workload chart's templates/_rules.tpl. `make manifests` runs it from
// the repository root; `make verify-generated` fails when its output is not
// committed.
package main

import (
	"flag"
	"log"
	"os"
	"path/filepath"

	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

func main() {
	root := flag.String("root", ".", "the repository root")
	flag.Parse()
	for path, data := range map[string][]byte{
		"config/rbac/workload/cluster_role.yaml":         workload.ClusterRoleYAML(),
		"charts/etcdfleet-workload/templates/_rules.tpl": workload.ChartRulesTemplate(),
	} {
		if err := os.WriteFile(filepath.Join(*root, path), data, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}
