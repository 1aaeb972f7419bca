package e2eutil

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/etcdfleet/etcdfleet/memberctl/operator"
)

// Scheme knows the built-in kinds and etcd.etcdfleet.io.
func Scheme() *runtime.Scheme {
	return operator.Scheme()
}

// StartOperator runs the single-cluster operator against cfg until the
// returned stop func is called (stop waits for it to exit).
func StartOperator(ctx context.Context, cfg *rest.Config, opts operator.Options) (stop func()) {
	GinkgoHelper()
	mgr, err := ctrl.NewManager(rest.CopyConfig(cfg), operator.ManagerOptions(ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Several operators run in one test process, one per cluster.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}))
	Expect(err).NotTo(HaveOccurred())
	closer, err := operator.SetupWithManager(mgr, opts)
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer closer.Close()
		_ = mgr.Start(ctx)
	}()
	return func() { cancel(); <-done }
}
