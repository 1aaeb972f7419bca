// Package etcddata_test runs the single-cluster operator (memberctl)
// against sandbox clusters with real kube-apiservers, real etcd and real
// object storage, on what it does with etcd's data: EtcdSnapshots and
// scheduled backups, restores at bootstrap and EtcdDefrags. Members'
// lifecycle is test/e2e/memberctl's, their faults test/e2e/faults' and
// test/e2e/recovery's, and the restore after total loss
// test/e2e/totalloss'; they run as separate
// packages so that go test runs them side by side and none takes ten
// minutes alone.
package etcddata_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

// One sandbox for the suite, its cluster "pf" operated over port-forward
// through its apiserver: snapshots, backups, restores at bootstrap and
// defragmentation. No spec here cuts a node's power (test/e2e/totalloss
// does, on a sandbox of its own).
var (
	sb *e2eutil.OperatedSandbox
	// fleet and clients are sb's, by the names the specs use.
	fleet   *sandbox.Fleet
	clients map[string]client.WithWatch
)

// healthEvery is the suite's pace of the cluster reconciler's looks at
// etcd's health (production: 30 s), so that the NOSPACE spec sees the
// alarm within a second of its poke instead of waiting out half a minute.
const healthEvery = time.Second

// backupGrace is the suite's grace of a scheduled snapshot before BackedUp
// says BackupBehindSchedule (production: the snapshot Job's deadline,
// 25 min), so that the behind-schedule spec waits seconds, not minutes.
// Longer than any snapshot of the suite's small clusters takes.
const backupGrace = 30 * time.Second

func TestEtcdData(t *testing.T) { e2eutil.RunSuite(t, "etcd data e2e Suite") }

var _ = BeforeSuite(func(ctx SpecContext) {
	opts := e2eutil.OperatorOptions()
	opts.Cluster.HealthEvery = healthEvery
	opts.Backup.Grace = backupGrace
	sb = e2eutil.StartOperatedSandboxWith(ctx, opts, "pf")
	fleet, clients = sb.Fleet, sb.Clients
}, NodeTimeout(3*time.Minute))
