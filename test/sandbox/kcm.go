package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"k8s.io/client-go/rest"

	"github.com/etcdfleet/etcdfleet/test/sandbox/proc"
)

// kcmControllers are the controllers a real cluster has that our tests rely
// on: ownerReference cascades, namespace cleanup, default service accounts,
// and PVC protection (the apiserver's admission adds the pvc-protection
// finalizer; without its controller a deleted claim never goes).
const kcmControllers = "garbagecollector,namespace,serviceaccount,persistentvolumeclaim-protection"

func startControllerManager(assets, dir string, admin *rest.Config, certDir string) (*proc.Process, error) {
	kc, err := kubeconfigFor(admin, "sandbox", "kcm")
	if err != nil {
		return nil, err
	}
	kcPath := filepath.Join(dir, "kcm.kubeconfig")
	if err := os.WriteFile(kcPath, kc, 0o600); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "kube-controller-manager.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(filepath.Join(assets, "kube-controller-manager"),
		"--kubeconfig="+kcPath,
		"--controllers="+kcmControllers,
		// No leader election: a restarted KCM would wait out the lease.
		"--leader-elect=false",
		// No listener: parallel sandboxes would collide on :10257.
		"--secure-port=0",
		"--service-account-private-key-file="+filepath.Join(certDir, "sa-signer.key"),
	)
	cmd.Stdout, cmd.Stderr = log, log
	p, err := proc.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("start kube-controller-manager: %w", err)
	}
	return p, nil
}
