// Command etcdfleet-agent runs inside etcd member Pods, from the etcdfleet
// image (etcd's images have no shell). It only wires subcommands to their
// packages: datadir-guard is memberctl/datadirguard.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/etcdfleet/etcdfleet/memberctl/datadirguard"
)

// Exit codes: a lost data dir is told apart from a broken guard.
const (
	exitDataDirLost = 1
	exitError       = 2
)

func main() {
	root := &cobra.Command{Use: "etcdfleet-agent", Short: "Helpers etcdfleet runs inside etcd member Pods",
		SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(guardCmd())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if errors.Is(err, datadirguard.ErrDataDirLost) {
			os.Exit(exitDataDirLost)
		}
		os.Exit(exitError)
	}
}

func guardCmd() *cobra.Command {
	var cfg datadirguard.Config
	c := &cobra.Command{
		Use:   datadirguard.Subcommand,
		Short: "Refuse to start a memory-backed member whose data dir was wiped under a Pod that ran before",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			cfg.PodUID = os.Getenv("POD_UID")
			return datadirguard.Run(cfg)
		},
	}
	c.Flags().StringVar(&cfg.DataDir, "data-dir", "", "the member's etcd data directory (its memory-backed volume)")
	c.Flags().StringVar(&cfg.MarkerDir, "marker-dir", "", "a directory on a disk emptyDir of the same Pod, holding the first-start marker")
	c.Flags().StringVar(&cfg.TerminationMessagePath, "termination-message-path", "/dev/termination-log", "where to write the message the reconciler reads")
	return c
}
