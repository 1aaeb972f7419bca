// Package config holds what etcdfleet ships as manifests: the generated
// workload CRDs and the manager's workload RBAC, embedded so that
// etcdfleetctl and the manager apply exactly what the repo contains, and
// Apply, the one server-side apply loop both use.
//
// The manager's settings live in the settings subpackage.
package config
