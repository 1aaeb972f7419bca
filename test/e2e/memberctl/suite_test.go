// Package memberctl_test runs the single-cluster operator (memberctl)
// against sandbox clusters with real kube-apiservers and real etcd, on its
// members: the lifecycle over both ways of reaching etcd, and rolling
// upgrades. Crash loops, reboots and replacement safety are
// test/e2e/faults'; power loss, node loss, outages and drains and a lost
// majority's recovery test/e2e/recovery's; snapshots, backups, restores
// at bootstrap and defragmentation test/e2e/etcddata's; the restore after
// total loss test/e2e/totalloss'. They run as separate packages so that
// go test runs them side by side.
package memberctl_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

// One sandbox for the suite: "pf" is operated over port-forward through its
// apiserver, "direct" by dialling Pod IPs.
var (
	sb *e2eutil.OperatedSandbox
	// fleet and clients are sb's, by the names the specs use.
	fleet   *sandbox.Fleet
	clients map[string]client.WithWatch
)

func TestMemberctl(t *testing.T) { e2eutil.RunSuite(t, "memberctl e2e Suite") }

// tlsSecretsEvery is the suite's pace of the cluster reconciler's reads
// of a TLS cluster's Secrets (production: a minute), so that a renewal is
// rolled within a second of the test writing it.
const tlsSecretsEvery = time.Second

var _ = BeforeSuite(func(ctx SpecContext) {
	opts := e2eutil.OperatorOptions()
	opts.Cluster.TLSSecretsEvery = tlsSecretsEvery
	sb = e2eutil.StartOperatedSandboxWith(ctx, opts, "pf", e2eutil.DirectCluster)
	fleet, clients = sb.Fleet, sb.Clients
}, NodeTimeout(3*time.Minute))
