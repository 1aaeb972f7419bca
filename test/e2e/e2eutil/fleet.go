package e2eutil

import (
	"path/filepath"
	"runtime"

	"github.com/etcdfleet/etcdfleet/fleet/settings"
)

// crdDir is config/crd/<kind> of this checkout, found from this file's
// path so that it does not depend on the working directory.
func crdDir(kind string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "config", "crd", kind)
}

// WorkloadCRDDir is this checkout's workload CRD directory (the memberctl
// API), for a sandbox whose clusters run memberctl alone.
func WorkloadCRDDir() string { return crdDir("workload") }

// CRDDirs are this checkout's workload and management CRD directories,
// for a sandbox that runs the fleet manager.
func CRDDirs() []string {
	return []string{WorkloadCRDDir(), crdDir("management")}
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
