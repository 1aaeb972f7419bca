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
	"job-controller,ttl-after-finished-controller," +
	// What a long outage does: a Node whose kubelet stops renewing its
	// Lease is marked unreachable and tainted, and its Pods are evicted
	// past their tolerationSeconds (the kubelet caps them, see
	// kubelet.Options.MaxTolerationSeconds).
	"node-lifecycle-controller,taint-eviction-controller," +
	// What holds a drain: PodDisruptionBudgets' disruptionsAllowed, which
	// the apiserver's eviction subresource checks.
	"disruption-controller"

// NodeMonitorGracePeriod is how long the node lifecycle controller lets a
// Node's Lease and status go unrenewed before it marks the Node
// unreachable (a real cluster: 50 s, five of the kubelet's 10 s renewals).
// The sandbox's kubelet renews every 2 s (kubelet.Options.LeaseRenewInterval),
// so eight renewals in a row must be lost: the kubelet runs in the test
// process against a local apiserver, and a machine loaded enough to stall
// every write for 16 s fails its specs for other reasons first. A Node
// wrongly marked costs more than a flap: its Pods are marked NotReady
// (the kubelet writes them back on its next beat), and past another
// MaxTolerationSeconds (10 s) they would be evicted, so a spurious
// eviction needs 26 s without a single renewal. Shorter would save test
// time only in the specs that power nodes off for long.
const NodeMonitorGracePeriod = 16 * time.Second

// nodeMonitorPeriod is how often the controller checks: the delay it adds
// to NodeMonitorGracePeriod (a real cluster: 5 s).
const nodeMonitorPeriod = time.Second

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
		"--node-monitor-period="+nodeMonitorPeriod.String(),
		"--node-monitor-grace-period="+NodeMonitorGracePeriod.String(),
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
