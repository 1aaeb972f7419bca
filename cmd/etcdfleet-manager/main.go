// Command etcdfleet-manager runs the etcdfleet fleet controller on the
// management cluster. It only wires packages together; see fleet/app.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/etcdfleet/etcdfleet/fleet/app"
	"github.com/etcdfleet/etcdfleet/fleet/settings"
)

func main() {
	fs := pflag.NewFlagSet("etcdfleet-manager", pflag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "etcdfleet-manager keeps etcd healthy in every workload cluster registered by a kubeconfig Secret.\n\n"+
			"It connects to the management cluster from the in-cluster config or --kubeconfig.\n\nFlags:\n%s", fs.FlagUsages())
	}
	settings.AddFlags(fs)
	zapOpts := zap.Options{}
	goFlags := flag.NewFlagSet("", flag.ContinueOnError)
	zapOpts.BindFlags(goFlags)
	ctrl.RegisterFlags(goFlags) // --kubeconfig
	fs.AddGoFlagSet(goFlags)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == pflag.ErrHelp {
			return
		}
		os.Exit(2)
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")
	cfg, err := settings.Load(fs)
	if err != nil {
		log.Error(err, "bad configuration")
		os.Exit(2)
	}
	f, err := app.New(ctrl.GetConfigOrDie(), cfg)
	if err != nil {
		log.Error(err, "cannot set up the manager")
		os.Exit(1)
	}
	log.Info("starting", "namespace", cfg.Namespace, "limiterRate", cfg.Limiter.Rate, "limiterBurst", cfg.Limiter.Burst, "etcdAccess", cfg.EtcdAccess)
	if err := f.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "manager stopped")
		os.Exit(1)
	}
}
