package e2eutil

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/etcdfleet/etcdfleet/memberctl/operator"
)

// NewScheme is Scheme returning an error, for code outside a spec
// (benchmarks): Gomega's Expect panics when no fail handler is registered.
func NewScheme() (*runtime.Scheme, error) {
	return operator.Scheme(), nil
}

// RunOperator is StartOperator returning an error, for code outside a
// spec. It runs the single-cluster operator against cfg until the returned
// stop func is called (stop waits for it to exit).
func RunOperator(ctx context.Context, cfg *rest.Config, opts operator.Options) (stop func(), err error) {
	mgr, err := ctrl.NewManager(rest.CopyConfig(cfg), operator.ManagerOptions(ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	}))
	if err != nil {
		return nil, err
	}
	closer, err := operator.SetupWithManager(mgr, opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer closer.Close()
		_ = mgr.Start(ctx)
	}()
	return func() { cancel(); <-done }, nil
}
