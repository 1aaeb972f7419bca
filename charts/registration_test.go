package charts_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/limiter"
)

// TestDocsUseTheRegistrationConstants: the charts' notes and values and the
// docs tell users how to register and pause a cluster by hand, so they
// restate fleetv1.RegistrationLabel, KubeconfigKey and PausedAnnotation;
// this ties the text to the constants the manager and etcdfleetctl use.
func TestDocsUseTheRegistrationConstants(t *testing.T) {
	var files []string
	for _, pattern := range []string{"README.md", "docs/*.md", "charts/*/values.yaml", "charts/*/templates/*"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	// etcdfleet.io/<name>, but not the API groups (etcd.etcdfleet.io/...).
	key := regexp.MustCompile(`(?:^|[^.a-z])(etcdfleet\.io/[a-z0-9-]+)`)
	fromFile := regexp.MustCompile(`--from-file=([^=\s]+)=`)
	known := map[string]bool{fleetv1.RegistrationLabel: true, fleetv1.PausedAnnotation: true, fleetv1.ClusterIDAnnotation: true,
		// The limiter's part of the fleet bucket, on each replica's peer Lease.
		limiter.DemandAnnotation: true, limiter.ClaimAnnotation: true}
	mentions := map[string][]string{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for _, m := range key.FindAllStringSubmatch(string(raw), -1) {
			if !known[m[1]] {
				t.Errorf("%s names %s, which is none of fleetv1.RegistrationLabel (%s), PausedAnnotation (%s), ClusterIDAnnotation (%s) "+
					"and the limiter's DemandAnnotation and ClaimAnnotation", rel, m[1], fleetv1.RegistrationLabel, fleetv1.PausedAnnotation, fleetv1.ClusterIDAnnotation)
			}
			mentions[m[1]] = append(mentions[m[1]], rel)
		}
		for _, m := range fromFile.FindAllStringSubmatch(string(raw), -1) {
			if m[1] != fleetv1.KubeconfigKey {
				t.Errorf("%s stores the kubeconfig under key %q; the manager reads fleetv1.KubeconfigKey %q", rel, m[1], fleetv1.KubeconfigKey)
			}
		}
	}
	// Where users look for them, they must be there at all.
	for c, where := range map[string][]string{
		fleetv1.RegistrationLabel:   {"README.md", "docs/architecture.md", "charts/etcdfleet/templates/NOTES.txt"},
		fleetv1.PausedAnnotation:    {"README.md", "docs/operations.md", "charts/etcdfleet/templates/NOTES.txt"},
		fleetv1.ClusterIDAnnotation: {"docs/operations.md"},
	} {
		for _, w := range where {
			if !strings.Contains(strings.Join(mentions[c], "\n"), w) {
				t.Errorf("%s does not mention %s", w, c)
			}
		}
	}
}
