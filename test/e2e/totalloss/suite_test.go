// Package totalloss_test runs the single-cluster operator (memberctl)
// against a sandbox cluster with real kube-apiservers, real etcd and real
// object storage, and takes every member's data away at once: a power
// loss that empties every tmpfs, or every claim deleted with its node.
// With spec.recovery.restoreOnTotalLoss the cluster is re-bootstrapped
// from its newest snapshot that still verifies where it is stored. The
// other snapshot and restore specs are test/e2e/etcddata's, and node
// faults that a cluster survives test/e2e/faults'; they run as separate
// packages so that go test runs them side by side and none takes ten
// minutes alone.
package totalloss_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

// One sandbox for the suite: "faults", operated over port-forward through
// its apiserver, takes the node-wide power losses, so that they cannot
// disturb the clusters of another suite.
var (
	sb *e2eutil.OperatedSandbox
	// fleet and clients are sb's, by the names the specs use.
	fleet   *sandbox.Fleet
	clients map[string]client.WithWatch
)

// observeRevisionEvery is the suite's bound on how often the cluster
// reconciler refreshes status.lastObserved (production: 30 s), so that the
// spec that counts the revisions a restore loses sees the newest one
// within a second of its poke instead of waiting out half a minute.
const observeRevisionEvery = time.Second

func TestTotalLoss(t *testing.T) { e2eutil.RunSuite(t, "restore after total loss e2e Suite") }

var _ = BeforeSuite(func(ctx SpecContext) {
	opts := e2eutil.OperatorOptions()
	opts.Cluster.ObserveRevisionEvery = observeRevisionEvery
	sb = e2eutil.StartOperatedSandboxWith(ctx, opts, "faults")
	fleet, clients = sb.Fleet, sb.Clients
}, NodeTimeout(3*time.Minute))
