package sandbox_test

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
	"github.com/etcdfleet/etcdfleet/test/sandbox/kubelet"
)

// One fleet of two clusters serves every spec: starting clusters is the
// expensive part, and the specs use disjoint namespaces.
var fleet *sandbox.Fleet

func TestSandbox(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Sandbox Suite")
}

// Why each failed spec failed, at the end of the output where CI shows it.
var _ = ReportAfterSuite("failures, last", e2eutil.PrintFailures)

var _ = BeforeSuite(func(ctx SpecContext) {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	fleet, err = sandbox.Start(ctx, sandbox.Options{
		Clusters: []string{"s1", "s2"},
		Kubelet:  kubelet.Options{RestartBackoff: 200 * time.Millisecond, MaxRestartBackoff: time.Second},
		Logf:     func(f string, a ...any) { GinkgoWriter.Printf(f+"\n", a...) },
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		if CurrentSpecReport().Failed() || os.Getenv("SANDBOX_KEEP_LOGS") != "" {
			GinkgoWriter.Printf("sandbox state kept for inspection in %s\n", fleet.Dir)
		}
		Expect(fleet.Stop()).To(Succeed())
	})
}, NodeTimeout(3*time.Minute))

func bg() context.Context { return context.Background() }
