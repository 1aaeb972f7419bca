package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"

	"github.com/etcdfleet/etcdfleet/test/sandbox/proc"
)

// kcmControllers are the controllers a real cluster has that our tests rely
// on: ownerReference cascades, namespace cleanup, default service accounts,
// and PVC protection (the apiserver's admission adds the pvc-protection
// finalizer; without its controller a deleted claim never goes).
const kcmControllers = "garbage-collector-controller,namespace-controller,serviceaccount-controller,persistentvolumeclaim-protection-controller," +
	// Snapshot Jobs: their Pods, and their removal after ttlSecondsAfterFinished.
	"job-controller,ttl-after-finished-controller"

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
	// Bad flags make it exit at once; say so instead of running without a GC.
	select {
	case <-p.Done():
		out, _ := os.ReadFile(log.Name())
		return nil, fmt.Errorf("kube-controller-manager exited at start: %v\n%s", p.Err(), tail(out, 2000))
	case <-time.After(500 * time.Millisecond):
	}
	return p, nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
