package config

import (
	"bufio"
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// The generated workload CRDs and the manager's workload RBAC, embedded so
// etcdfleetctl applies exactly what the repo ships.
//
//go:embed crd/workload/*.yaml rbac/workload/*.yaml
var workloadFS embed.FS

// WorkloadCRDs returns the EtcdCluster, EtcdMember, EtcdSnapshot and EtcdDefrag CRDs.
func WorkloadCRDs() [][]byte { return readDir(workloadFS, "crd/workload") }

// workloadRBAC lists the RBAC files etcdfleetctl applies, in order (the
// kustomization and the optional long-lived token Secret are not applied).
// The admission policy comes last: its params (the ConfigMap, the
// EtcdCluster CRD) exist by then.
var workloadRBAC = []string{"namespace.yaml", "service_account.yaml", "cluster_role.yaml", "cluster_role_binding.yaml",
	"identity.yaml", "admission_policy.yaml"}

// WorkloadManifests returns the workload-side manifests in apply order:
// the CRDs, then the RBAC (namespace, ServiceAccount, ClusterRole, binding,
// the identity role and its binding)
// and the admission policy.
func WorkloadManifests() [][]byte {
	out := WorkloadCRDs()
	for _, f := range workloadRBAC {
		b, err := fs.ReadFile(workloadFS, path.Join("rbac/workload", f))
		if err != nil {
			panic(fmt.Sprintf("embedded manifest %s: %v", f, err)) // caught by the ctl tests
		}
		out = append(out, splitYAML(b)...)
	}
	return out
}

func readDir(f fs.FS, dir string) [][]byte {
	entries, err := fs.ReadDir(f, dir)
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	var out [][]byte
	for _, n := range names {
		b, err := fs.ReadFile(f, path.Join(dir, n))
		if err == nil {
			out = append(out, splitYAML(b)...)
		}
	}
	return out
}

// splitYAML splits a multi-document YAML file.
func splitYAML(b []byte) [][]byte {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if err != nil { // io.EOF, or a malformed file the tests catch
			return docs
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
}
