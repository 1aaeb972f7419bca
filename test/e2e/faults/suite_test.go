// Package faults_test runs the single-cluster operator (memberctl) against
// a sandbox cluster with real kube-apiservers and real etcd, and injects
// node-wide faults there: crash loops, power loss, a node that does not
// come back, a long outage and a drain, and the safety of replacements
// under them. The lifecycle and upgrades are test/e2e/memberctl's; the two
// are separate packages so that go test runs them side by side and neither
// takes ten minutes alone.
package faults_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

// One sandbox for the suite: "faults", operated over port-forward through
// its apiserver, takes every node-wide fault.
var (
	sb *e2eutil.OperatedSandbox
	// fleet and clients are sb's, by the names the specs use.
	fleet   *sandbox.Fleet
	clients map[string]client.WithWatch
)

func TestFaults(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "node faults e2e Suite")
}

// Why each failed spec failed, at the end of the output where CI shows it.
var _ = ReportAfterSuite("failures, last", e2eutil.PrintFailures)

var _ = BeforeSuite(func(ctx SpecContext) {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	sb = e2eutil.StartOperatedSandbox(ctx, "faults")
	fleet, clients = sb.Fleet, sb.Clients
	// A fourth Node, for "a long outage and a drain": it powers off the
	// three Nodes of a cluster, and the node lifecycle controller evicts
	// nothing while every Node is down. Added here, not in that spec, so
	// that every fault spec sees the same Nodes in any order.
	_, err := fleet.Cluster("faults").Kubelet.AddNode(ctx)
	Expect(err).NotTo(HaveOccurred())
}, NodeTimeout(3*time.Minute))
