// Command demo runs etcdfleet's main job on a local fleet: see package
// fleetdemo. Run it with `make demo`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/etcdfleet/etcdfleet/test/demo/fleetdemo"
)

func main() {
	opts := fleetdemo.DefaultOptions()
	flag.BoolVar(&opts.Keep, "keep", false, "leave the fleet running after the demo and print the kubeconfigs (Ctrl-C to stop)")
	flag.BoolVar(&opts.SandboxOnly, "sandbox-only", false, "only start the clusters and print their kubeconfigs, with no manager and nothing registered, to try helm install and etcdfleetctl by hand (Ctrl-C to stop)")
	flag.IntVar(&opts.Clusters, "clusters", opts.Clusters, "workload clusters to start")
	flag.IntVar(&opts.EtcdClustersPer, "etcd-clusters", opts.EtcdClustersPer, "EtcdClusters per workload cluster")
	flag.Float64Var(&opts.Rate, "limiter-rate", opts.Rate, "fleet-wide replacements per second")
	flag.IntVar(&opts.Burst, "limiter-burst", opts.Burst, "fleet-wide replacement burst")
	flag.StringVar(&opts.TimelinePath, "timeline", opts.TimelinePath, "where to write the heal's picture (SVG)")
	verbose := flag.Bool("v", false, "show the manager's logs")
	flag.Parse()
	// The grant log gives the picture its limiter waits; it sees every
	// Info line whether or not the logs are shown.
	opts.Grants = &fleetdemo.GrantLog{}
	if *verbose {
		ctrl.SetLogger(logr.New(opts.Grants.Sink(zap.New(zap.UseDevMode(true)).GetSink())))
	} else {
		ctrl.SetLogger(logr.New(opts.Grants.Sink(zap.New(zap.WriteTo(discard{})).GetSink())))
		// client-go and the simulated kubelet's port-forward server log
		// every refused forward during the reboot through klog: expected
		// there, and noise between the progress lines.
		klog.SetLogger(logr.Discard())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := fleetdemo.Run(ctx, os.Stdout, opts); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
