package app_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/etcdfleet/etcdfleet/fleet/app"
	"github.com/etcdfleet/etcdfleet/fleet/settings"
	"github.com/etcdfleet/etcdfleet/test/envtestenv"
)

// limiterSeries are gathered from controller-runtime's registry, the one
// the manager's /metrics endpoint serves.
func limiterSeries() []string {
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, mf := range families {
		names = append(names, mf.GetName())
	}
	return names
}

var _ = Describe("limiter metrics", func() {
	It("are served by a running manager, and withdrawn when it stops", func(ctx SpecContext) {
		env, err := envtestenv.Start(envtestenv.ManagementCRDs)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(env.Stop)
		const ns = "etcdfleet-system"
		Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		c := settings.Default()
		c.Namespace, c.LeaderElection, c.MetricsBindAddress, c.HealthProbeBindAddress = ns, false, "0", "0"
		stop := runFleet(env.Config, c)

		series := []string{"etcdfleet_limiter_tokens_available", "etcdfleet_limiter_waiting_requests",
			"etcdfleet_limiter_wait_seconds", "etcdfleet_snapshot_starts_running", "etcdfleet_snapshot_starts_waiting",
			"etcdfleet_snapshot_start_wait_seconds"}
		Eventually(limiterSeries).WithTimeout(30 * time.Second).Should(ContainElements(series))
		stop()
		Expect(limiterSeries()).NotTo(ContainElement(Or(HavePrefix("etcdfleet_limiter_"), HavePrefix("etcdfleet_snapshot_start"))),
			"a stopped manager's series must go, or the next manager in the process could not register its own")
	}, SpecTimeout(3*time.Minute))
})

// runFleet starts a fleet manager; stop cancels it and waits for a clean
// exit. Cleanup cancels it too, before the apiserver stops, should the
// spec fail.
func runFleet(cfg *rest.Config, c settings.Config) (stop func()) {
	GinkgoHelper()
	fm, err := app.New(cfg, c)
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	DeferCleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- fm.Start(ctx) }()
	return func() {
		cancel()
		// Bounded so that a manager that does not stop fails the spec
		// rather than hanging it; 30s covers its graceful shutdown.
		Eventually(done).WithTimeout(30 * time.Second).Should(Receive(BeNil()))
	}
}
