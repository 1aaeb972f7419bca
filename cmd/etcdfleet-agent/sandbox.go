//go:build sandbox

package main

import "github.com/etcdfleet/etcdfleet/test/sandbox/sandboxdns"

// The sandbox builds the agent with -tags sandbox: its Pods resolve
// Kubernetes DNS names from the sandbox hosts file, as real Pods do from
// the cluster DNS. Release builds never contain this file.
func init() { sandboxdns.InstallFromEnv() }
