// Package faults_test runs the single-cluster operator (memberctl) against
// a sandbox cluster with real kube-apiservers and real etcd, and injects
// the faults that the member controller's replacements answer: crash
// loops, Pods that fail admission, a reboot while the operator is stopped,
// a reboot of a memory cluster, and the safety of replacements under them
// (one removal at a time, none on a guess, a capped loop). The lifecycle
// and upgrades are test/e2e/memberctl's; power loss, a node that does not
// come back, a long outage and a drain, and a lost majority recovered from
// its survivor are test/e2e/recovery's. They are separate packages so that
// go test runs them side by side and none takes ten minutes alone.
package faults_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

// One sandbox for the suite: "faults", operated over port-forward through
// its apiserver, with the sandbox's three Nodes, takes every fault.
var (
	sb *e2eutil.OperatedSandbox
	// fleet and clients are sb's, by the names the specs use.
	fleet   *sandbox.Fleet
	clients map[string]client.WithWatch
)

func TestFaults(t *testing.T) { e2eutil.RunSuite(t, "node faults e2e Suite") }

var _ = BeforeSuite(func(ctx SpecContext) {
	sb = e2eutil.StartOperatedSandbox(ctx, "faults")
	fleet, clients = sb.Fleet, sb.Clients
}, NodeTimeout(3*time.Minute))
