package kubeconfigsecret

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNothingOfEtcdfleet keeps the provider generic: what it
// watches, checks and registers by is filled in by its caller (fleet/app),
// so it must import nothing of memberctl/ or fleet/.
func TestImportsNothingOfEtcdfleet(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const module = "github.com/etcdfleet/etcdfleet/"
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, module) && !strings.HasPrefix(dep, module+"providers/") {
			t.Errorf("providers/kubeconfigsecret imports %s; pass it in through Options instead", dep)
		}
	}
}
