// Package etcddata_test runs the single-cluster operator (memberctl)
// against sandbox clusters with real kube-apiservers, real etcd and real
// object storage, on what it does with etcd's data: EtcdSnapshots and
// scheduled backups, restores (at bootstrap and after total loss) and
// EtcdDefrags. Members' lifecycle is test/e2e/memberctl's and their
// faults test/e2e/faults'; they run as separate packages so that go test
// runs them side by side.
package etcddata_test

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

// One sandbox for the suite, each cluster operated over port-forward
// through its apiserver: "pf" for snapshots, backups, restores at
// bootstrap and defragmentation; "faults" takes the node-wide power loss
// of the restore after total loss, so that it cannot disturb the others.
var (
	sb *e2eutil.OperatedSandbox
	// fleet and clients are sb's, by the names the specs use.
	fleet   *sandbox.Fleet
	clients map[string]client.WithWatch
)

func TestEtcdData(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "etcd data e2e Suite")
}

// Why each failed spec failed, at the end of the output where CI shows it.
var _ = ReportAfterSuite("failures, last", e2eutil.PrintFailures)

var _ = BeforeSuite(func(ctx SpecContext) {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	sb = e2eutil.StartOperatedSandbox(ctx, "pf", "faults")
	fleet, clients = sb.Fleet, sb.Clients
}, NodeTimeout(3*time.Minute))
