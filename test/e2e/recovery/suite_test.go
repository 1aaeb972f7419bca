// Package recovery_test runs the single-cluster operator (memberctl)
// against a sandbox cluster with real kube-apiservers and real etcd, and
// takes nodes away the way a data centre does: hard power loss of one
// node or of every node, a node that does not come back
// (spec.recovery.nodeLossTimeout), a long outage and a drain done by
// Kubernetes' own controllers, and a lost majority recovered from its
// survivor (spec.recovery.quorumLoss). The faults that the member
// controller's replacements answer (crash loops, admission failures,
// reboots, replacement safety) are test/e2e/faults', and a total loss
// restored from a backup test/e2e/totalloss'. They are separate packages
// so that go test runs them side by side and none takes ten minutes alone.
package recovery_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

// cluster is the suite's one sandbox cluster, operated over port-forward
// through its apiserver; it takes every power loss and outage, so that
// they cannot disturb the clusters of another suite.
const cluster = "recovery"

var (
	sb *e2eutil.OperatedSandbox
	// fleet and clients are sb's, by the names the specs use.
	fleet   *sandbox.Fleet
	clients map[string]client.WithWatch
)

func TestRecovery(t *testing.T) { e2eutil.RunSuite(t, "node loss and recovery e2e Suite") }

var _ = BeforeSuite(func(ctx SpecContext) {
	sb = e2eutil.StartOperatedSandbox(ctx, cluster)
	fleet, clients = sb.Fleet, sb.Clients
	// A fourth and a fifth Node, for "a long outage and a drain": it
	// powers off the three Nodes of a PVC cluster, and the node lifecycle
	// controller evicts nothing while every Node is down; the two that
	// stay up hold two members of its memory cluster, which keep quorum.
	// Added here, not in that spec, so that every spec sees the same Nodes
	// in any order.
	for range 2 {
		_, err := fleet.Cluster(cluster).Kubelet.AddNode(ctx)
		Expect(err).NotTo(HaveOccurred())
	}
}, NodeTimeout(3*time.Minute))
