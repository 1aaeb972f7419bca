// Package fleet_test runs the whole fleet manager (fleet/app: the
// kubeconfig-Secret provider, the memberctl reconcilers for every engaged
// cluster, the shared replacement limiter and the dashboard) in process
// against a sandbox of one management cluster and four workload clusters,
// and checks the fleet's acceptance criteria from the API servers' side.
package fleet_test

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/etcdfleet/etcdfleet/fleet/app"
	"github.com/etcdfleet/etcdfleet/fleet/settings"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
	"github.com/etcdfleet/etcdfleet/test/sandbox/kubelet"
)

const (
	// secretNS holds the registration Secrets and the FleetClusters.
	secretNS = "etcdfleet-system"
	// etcdNS holds the EtcdClusters in every workload cluster.
	etcdNS = "fleet"
	// keys written to each EtcdCluster once and verified after every fault.
	keys = 50
	// The limiter's figures; the spec
	// "paces the fleet's terminal-Pod deletes at the limiter's rate and burst, and serves every cluster fairly"
	// checks the API servers see them.
	limiterRate  = 2
	limiterBurst = 4
)

var (
	workloads = []string{"w1", "w2", "w3", "w4"}
	etcdNames = []string{"etcd-a", "etcd-b"}

	sb     *sandbox.Fleet
	mgmtC  client.Client // management cluster (fleet scheme)
	fm     *app.Fleet
	states *stateLog
	// wc and wcfg reach each workload apiserver directly, bypassing the
	// front door that Hang affects: they are the test's eyes, not the code
	// under test's.
	wc   = map[string]client.WithWatch{}
	wcfg = map[string]*rest.Config{}

	// measured by earlier specs and compared against by later ones.
	figures struct {
		sync.Mutex
		// healTime of the undisturbed fleet reboot, the spec
		// "heals 4 clusters × 2 EtcdClusters × 3 members left Succeeded or Failed: every EtcdCluster Available, every key, the same member IDs".
		healTime time.Duration
		// engageTime: slowest Secret-to-Connected of the spec
		// "engages clusters registered by Secret and disengages one whose Secret is deleted and one whose label is removed".
		engageTime time.Duration
	}
)

func TestFleet(t *testing.T) { e2eutil.RunSuite(t, "fleet e2e Suite") }

// managerConfig is settings.Default() with timings shortened for the test.
func managerConfig() settings.Config {
	c := e2eutil.ManagerConfig(secretNS)
	c.Limiter.Rate, c.Limiter.Burst = limiterRate, limiterBurst
	c.Clusters.PreflightTimeout = 5 * time.Second
	// A hung cluster is dropped after about 15 × 2 s = 30 s: like the
	// defaults' 5 × 10 s, longer than the fleet takes to heal, so that
	// the hung cluster of the spec
	// "heals three rebooted clusters within the limiter's bound while the fourth, holding more members than there are workers, hangs after its first replacement"
	// stays engaged while the others heal, as it would in production.
	c.Clusters.ProbeInterval, c.Clusters.ProbeTimeout, c.Clusters.FailureThreshold = 2*time.Second, 1500*time.Millisecond, 15
	c.Dashboard.MinInterval, c.Dashboard.Resync = 250*time.Millisecond, 2*time.Second
	// Several reboots hit the same members within minutes; reset their
	// backoff quickly so that every reboot heals at the same pace.
	c.Replacement.HealthyReset = 10 * time.Second
	// Fewer workers than the members of one cluster that the limiter
	// grants a token within a few seconds of a fleet reboot, so that that
	// spec's hung cluster has more members in flight than there are workers
	// (a 9-member cluster beside 8 workers would cost more processes for
	// the same).
	// One of them per cluster: a hung cluster keeps its requests to one and
	// leaves three to the others (workersPerCluster), one each. With 3
	// workers the three healthy clusters shared two, one of them always
	// waiting, and under make test's load a granted member's Pod took up
	// to 11 s to be recreated behind the other clusters' reconciles (CI-T):
	// the spec then timed that queue, not the hung cluster's cost.
	c.Workers, c.WorkersPerCluster = 4, 1
	// The spec "rolls an upgrade of every cluster at most
	// rollout.maxConcurrentClusters at a time; ..." upgrades all four.
	c.Rollout.MaxConcurrentClusters = waveMax
	return c
}

var _ = BeforeSuite(func(ctx SpecContext) {
	// Everything logged is kept too: the spec
	// "never shows a credential in any Event, status, log line or metric label, through a rotation, a heal and bad Secrets"
	// greps it for credentials.
	logf.SetLogger(zap.New(zap.WriteTo(io.MultiWriter(GinkgoWriter, &suiteLog)), zap.UseDevMode(true), zap.Level(zapcore.InfoLevel),
		// Sub-second times: the wave spec orders the limiter's grant lines.
		func(o *zap.Options) { o.TimeEncoder = zapcore.RFC3339NanoTimeEncoder }))
	start := time.Now()
	if shardingSelected() {
		workloads = nil
		for i := 1; i <= shardWorkloads; i++ {
			workloads = append(workloads, fmt.Sprintf("w%d", i))
		}
	}
	var err error
	sb, err = sandbox.Start(ctx, sandbox.Options{
		Clusters: append([]string{"mgmt"}, workloads...),
		CRDDirs:  e2eutil.CRDDirs(),
		Kubelet:  kubelet.Options{RestartBackoff: 200 * time.Millisecond, MaxRestartBackoff: time.Second},
		// Audit: the handover specs time deletes as the apiservers received them.
		Audit: true,
		Logf:  func(f string, a ...any) { GinkgoWriter.Printf(f+"\n", a...) },
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(sb.Stop()).To(Succeed()) })
	AddReportEntry("sandbox start", time.Since(start).Round(time.Second).String())

	mgmtC, err = client.New(sb.Cluster("mgmt").Config, client.Options{Scheme: app.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	Expect(client.IgnoreAlreadyExists(mgmtC.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secretNS}}))).To(Succeed())
	for _, w := range workloads {
		wcfg[w] = directConfig(sb.Cluster(w))
		wc[w], err = client.NewWithWatch(wcfg[w], client.Options{Scheme: app.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		// What etcdfleetctl register installs and stores: the manager's
		// ServiceAccount with its RBAC, under the admission policies.
		goodKubeconfig[w], err = e2eutil.RegisterInstall(ctx, sb.Cluster(w))
		Expect(err).NotTo(HaveOccurred())
	}

	fm, err = app.New(sb.Cluster("mgmt").Config, managerConfig())
	Expect(err).NotTo(HaveOccurred())
	stopFleetManager := e2eutil.RunFleetManager(fm)
	states = recordStates(context.Background(), 20*time.Millisecond)
	stopSuiteManager = sync.OnceFunc(func() {
		suiteManagerStopped = true
		stopFleetManager()
	})
	// Registered after the sandbox's cleanup, so it runs first.
	DeferCleanup(func() { stopSuiteManager() })
}, NodeTimeout(4*time.Minute))

// stopSuiteManager stops the in-process manager (once); the handover specs
// run manager processes of their own instead.
var (
	stopSuiteManager    func()
	suiteManagerStopped bool
)

// directConfig is c.Config aimed at the apiserver itself rather than at
// the front door (same certificates, same admin user).
func directConfig(c *sandbox.Cluster) *rest.Config {
	u := c.Clientset.CoreV1().RESTClient().Get().URL()
	cfg := rest.CopyConfig(c.Config)
	cfg.Host = u.Scheme + "://" + u.Host
	cfg.QPS, cfg.Burst = 200, 400
	return cfg
}

// The specs, in this order (Ordered: the later ones compare against
// figures the earlier ones measure, and fall back to fixed references when
// focused alone). The registration spec starts by unregistering
// everything, every other spec from baseline(); the reboot's pacing spec
// judges what its heal spec recorded. A failure does not skip the rest
// (ContinueOnFailure): baseline() repairs what it can.
var _ = Describe("the fleet manager", Ordered, ContinueOnFailure, func() {
	registrationSpecs()
	rebootSpecs()
	isolationSpecs()
	hungSpecs()
	badSecretSpecs()
	rotationSpecs()
	duplicateSpecs()
	rightsSpecs()
	credentialSpecs()
	pauseSpecs()
	waveSpecs()
	handoverSpecs()
	shardSpecs()
	shardFenceSpecs()
})
