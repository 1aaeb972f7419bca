package e2eutil

import (
	"path/filepath"
	"runtime"

	"github.com/etcdfleet/etcdfleet/config/settings"
)

// CRDDirs are this checkout's workload and management CRD directories,
// for a sandbox that runs the fleet manager.
func CRDDirs() []string {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	return []string{filepath.Join(root, "config", "crd", "workload"), filepath.Join(root, "config", "crd", "management")}
}

// ManagerConfig is settings.Default() for a fleet manager run in the test
// process: registrations in ns, no leader election (one manager), and no
// metrics or probe listeners (several tests share the host's ports).
func ManagerConfig(ns string) settings.Config {
	c := settings.Default()
	c.Namespace = ns
	c.LeaderElection, c.MetricsBindAddress, c.HealthProbeBindAddress = false, "0", "0"
	return c
}
