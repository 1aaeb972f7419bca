// Command etcdfleet-agent runs inside etcd member Pods, from the etcdfleet
// image (etcd's images have no shell), and as the snapshot Job. It only
// wires subcommands to their packages: datadir-guard is
// memberctl/datadirguard, snapshot-agent is memberctl/snapshot/agent,
// restore-agent is memberctl/snapshot/restore.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/etcdfleet/etcdfleet/memberctl/datadirguard"
	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/restore"
)

// Exit codes: a lost data dir is told apart from a broken guard, and a
// snapshot Job's failure that a retry would meet again
// (agent.ExitPermanent) from one worth retrying.
const (
	exitDataDirLost = 1
	exitError       = 2
)

func main() {
	root := &cobra.Command{Use: "etcdfleet-agent", Short: "Helpers etcdfleet runs inside etcd member Pods",
		SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(guardCmd(), snapshotCmd(), restoreCmd())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if errors.Is(err, datadirguard.ErrDataDirLost) {
			os.Exit(exitDataDirLost)
		}
		if agent.Permanent(err) {
			os.Exit(agent.ExitPermanent)
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

func snapshotCmd() *cobra.Command {
	var cfg agent.Config
	var s3 agent.S3
	c := &cobra.Command{
		Use:   agent.Subcommand,
		Short: "Stream an etcd snapshot to S3 or a file, verify it by reading it back, and report it as the termination message (--delete removes a stored one, --check-sha256 checks one, with --drill-dir by restoring it into a throwaway etcd)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			agent.Finish(&cfg, &s3)
			if cfg.Delete {
				return agent.Delete(c.Context(), cfg)
			}
			if cfg.CheckSHA256 != "" && cfg.DrillDir != "" {
				// A drill restores: etcdutl's restore and etcd's server
				// live in package restore, which the manager never links.
				return restore.Drill(c.Context(), cfg)
			}
			if cfg.CheckSHA256 != "" {
				return agent.Check(c.Context(), cfg)
			}
			res, err := agent.Run(c.Context(), cfg)
			if err == nil {
				fmt.Printf("snapshot stored: size=%d sha256=%s revision=%d\n", res.SizeBytes, res.SHA256, res.Revision)
			}
			return err
		},
	}
	agent.BindFlags(c.Flags(), &cfg, &s3)
	return c
}

func restoreCmd() *cobra.Command {
	var cfg restore.Config
	var s3 agent.S3
	c := &cobra.Command{
		Use:   restore.Subcommand,
		Short: "Write a new member's data dir from a stored snapshot (a new cluster ID); does nothing if the data dir holds a member",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			restore.Finish(&cfg, &s3)
			err := restore.Run(c.Context(), cfg)
			if errors.Is(err, restore.ErrAlreadyRestored) {
				fmt.Println(err)
				return nil
			}
			return err
		},
	}
	restore.BindFlags(c.Flags(), &cfg, &s3)
	return c
}
