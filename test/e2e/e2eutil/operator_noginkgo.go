package e2eutil

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/etcdfleet/etcdfleet/fleet/app"
	"github.com/etcdfleet/etcdfleet/fleet/settings"
	"github.com/etcdfleet/etcdfleet/memberctl/operator"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// NewScheme is Scheme returning an error, for code outside a spec
// (benchmarks): Gomega's Expect panics when no fail handler is registered.
func NewScheme() (*runtime.Scheme, error) {
	return operator.Scheme(), nil
}

// OperatorOptions are the reconcilers' options of the manager's default
// settings, as fleet/app sets them: the suites' operator runs with what
// production runs.
func OperatorOptions() operator.Options { return app.OperatorOptions(settings.Default()) }

// RunOperator is StartOperator returning an error, for code outside a
// spec. It runs the operator against cfg's cluster alone until the
// returned stop func is called (stop waits for it to exit): production's
// wiring (operator.Setup) on a multicluster manager without a provider,
// whose controllers engage the local cluster.
func RunOperator(ctx context.Context, cfg *rest.Config, access operator.Access, opts operator.Options) (stop func(), err error) {
	mgr, err := mcmanager.New(rest.CopyConfig(cfg), nil, operator.ManagerOptions(ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Several operators run in one test process, one per cluster.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}))
	if err != nil {
		return nil, err
	}
	cl, closer, err := operator.NewLocalCluster(mgr, access)
	if err != nil {
		return nil, err
	}
	opts.Clusters, opts.SkipNameValidation = workload.Static{C: cl}, true
	if err := operator.Setup(mgr, opts); err != nil {
		return nil, errors.Join(err, closer.Close())
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
