// Package pacing_test checks the fleet-wide pacing of snapshot starts: the
// whole fleet manager (fleet/app) in process against a sandbox of one
// management cluster and ten workload clusters, each with a real
// one-member etcd, storing snapshots to real object storage (SeaweedFS),
// and the fair share of them: the per-cluster cap and the agent's stage
// limits keep a cluster whose endpoint stalls from holding up the others
// (fair_slots_test.go). The same fleet shows the backups of ten
// EtcdClusters of one name and namespace, configured alike (one bucket,
// one prefix, one cron), staying each cluster's own through rounds and
// retention and restoring each cluster's own keys (own_backups_test.go),
// SSE-S3 objects (sse_test.go) and an old-layout object restored from a
// copy (legacy_layout_test.go). Every workload cluster is registered by
// ctl.Register, so its admission policies (the workload chart's) enforce
// throughout. What it asserts is read from the workload apiservers' side
// and from the object store.
package pacing_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/etcdfleet/etcdfleet/fleet/app"
	"github.com/etcdfleet/etcdfleet/fleet/ctl"
	"github.com/etcdfleet/etcdfleet/fleet/settings"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
	"github.com/etcdfleet/etcdfleet/test/sandbox/kubelet"
	"github.com/etcdfleet/etcdfleet/test/sandbox/objstore"
)

const (
	// secretNS holds the registration Secrets.
	secretNS = "etcdfleet-system"
	// etcdNS holds the EtcdCluster, its snapshots and the S3 Secret in
	// every workload cluster.
	etcdNS = "backups"
	// etcdName is each workload cluster's EtcdCluster.
	etcdName = "etcd"
	// bucket receives every snapshot.
	bucket = "backups"
	// maxConcurrent is the configured concurrency under test, below the
	// number of clusters so that most snapshots must wait.
	maxConcurrent = 3
	// workloadCount clusters snapshot at the same moment.
	workloadCount = 10
)

var (
	workloads []string
	sb        *sandbox.Fleet
	s3        *objstore.Server
	// wc reaches each workload apiserver directly: the test's eyes.
	wc = map[string]client.WithWatch{}
)

func TestPacing(t *testing.T) { e2eutil.RunSuite(t, "snapshot pacing e2e Suite") }

// managerConfig is settings.Default() with the snapshot concurrency under
// test. Starts are spaced 100 ms apart, so that the spacing never hides
// the concurrency limit: ten snapshots asked at once would all start
// within a second without it.
func managerConfig() settings.Config {
	c := e2eutil.ManagerConfig(secretNS)
	c.Snapshots.MaxConcurrent, c.Snapshots.StartsPerMinute = maxConcurrent, 600
	c.Workers, c.WorkersPerCluster = 4, 2
	// Short stage limits, so that the fair-slots spec's tarpit fails a
	// snapshot within seconds per try; SeaweedFS on loopback answers in
	// milliseconds.
	c.SnapshotAgent.ConnectTimeout, c.SnapshotAgent.FirstByteTimeout, c.SnapshotAgent.ThroughputWindow = 5*time.Second, 5*time.Second, 10*time.Second
	return c
}

var _ = BeforeSuite(func(ctx SpecContext) {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true), zap.Level(zapcore.InfoLevel)))
	for i := 1; i <= workloadCount; i++ {
		workloads = append(workloads, fmt.Sprintf("w%02d", i))
	}
	s3 = e2eutil.StartObjectStore(ctx, bucket)

	start := time.Now()
	// One Node per cluster: each runs one etcd member and one snapshot
	// Pod at a time, and the cheapest sandbox cluster is what ten of them
	// need on two cores.
	var err error
	sb, err = sandbox.Start(ctx, sandbox.Options{
		Clusters: append([]string{"mgmt"}, workloads...),
		Nodes:    1,
		CRDDirs:  e2eutil.CRDDirs(),
		Kubelet:  kubelet.Options{RestartBackoff: 200 * time.Millisecond, MaxRestartBackoff: time.Second},
		Logf:     func(f string, a ...any) { GinkgoWriter.Printf(f+"\n", a...) },
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(sb.Stop()).To(Succeed()) })
	AddReportEntry("sandbox start", time.Since(start).Round(time.Second).String())

	mgmtC, err := client.New(sb.Cluster("mgmt").Config, client.Options{Scheme: app.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	Expect(mgmtC.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secretNS}})).To(Succeed())
	fm, err := app.New(sb.Cluster("mgmt").Config, managerConfig())
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(e2eutil.RunFleetManager(fm))

	for _, w := range workloads {
		wc[w], err = client.NewWithWatch(sb.Cluster(w).Config, client.Options{Scheme: app.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		// Registered by etcdfleetctl register with its default scope, the
		// EtcdClusters' namespace: the snapshot Jobs run under the RBAC and
		// admission policies users get, through a cache scoped to it.
		Expect(wc[w].Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: etcdNS}})).To(Succeed())
		Expect(ctl.Register(ctx, ctl.RegisterOptions{Name: w, Workload: sb.Cluster(w).Config, Management: sb.Cluster("mgmt").Config,
			Namespace: secretNS, WatchNamespaces: []string{etcdNS}, AllowedS3Endpoints: []string{objstore.IP}, Out: GinkgoWriter})).To(Succeed())
		Expect(wc[w].Create(ctx, e2eutil.S3Secret(etcdNS, s3))).To(Succeed())
		Expect(wc[w].Create(ctx, e2eutil.NewEtcdCluster(etcdNS, etcdName, 1, false))).To(Succeed())
	}
	for _, w := range workloads {
		e2eutil.WaitAvailable(ctx, wc[w], etcdNS, etcdName, 3*time.Minute)
	}
	AddReportEntry("fleet up", time.Since(start).Round(time.Second).String())
}, NodeTimeout(8*time.Minute))
