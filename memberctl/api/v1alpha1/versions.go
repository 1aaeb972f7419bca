package v1alpha1

// SupportedVersions are the etcd versions etcdfleet runs, oldest first:
// the one table of them. EtcdCluster spec.version must be one of them (its
// enum; a test in this package fails when the two differ), and the workload
// admission policy admits etcd's official images at these tags only
// (quay.io/coreos/etcd:v<version>, ...; `make manifests` writes them into
// config/rbac/workload/admission_policy.yaml and the workload chart).
// Exact versions, not a range: any tag of etcd's repositories would admit
// old images that ship /bin/sh, and the policy's entrypoint check would be
// all that kept a stolen token from a shell.
//
// To support a version: add it here and to the enum marker of
// EtcdClusterSpec.Version, then run `make manifests`. Drop one only after a
// release that offered its successor: a workload cluster still running it
// could no longer replace a member.
//
// The floor is the fix of CVE-2026-73500 (TLS clients that never send a
// ClientHello leak server goroutines without bound): 3.6.14 and 3.7.1.
// Every later patch release served on the day is listed; 3.6.11+ is also
// what etcd requires before an upgrade to 3.7.
var SupportedVersions = []string{
	"3.6.14", "3.6.15", "3.6.16",
	"3.7.1", "3.7.2", "3.7.3", // 3.7.3: the sandbox's (Makefile ETCD_VERSION) and the samples'
}
