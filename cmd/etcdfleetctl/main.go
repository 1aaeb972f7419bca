// Command etcdfleetctl registers workload clusters with an etcdfleet
// management cluster and shows the fleet dashboard. Logic: fleet/ctl.
package main

import (
	"context"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/ctl"
)

type mgmtFlags struct{ kubeconfig, context, namespace string }

func (m *mgmtFlags) bind(c *cobra.Command) {
	c.Flags().StringVar(&m.kubeconfig, "mgmt-kubeconfig", "", "kubeconfig of the management cluster (default $KUBECONFIG or ~/.kube/config)")
	c.Flags().StringVar(&m.context, "mgmt-context", "", "context of the management cluster in that kubeconfig (default: its current context)")
	c.Flags().StringVarP(&m.namespace, "namespace", "n", fleetv1.DefaultRegistrationNamespace, "namespace of the registration Secrets on the management cluster")
}

func (m *mgmtFlags) config() (*rest.Config, error) { return ctl.RESTConfig(m.kubeconfig, m.context) }

func main() {
	root := &cobra.Command{Use: "etcdfleetctl", Short: "Register workload clusters with etcdfleet and show the fleet dashboard",
		SilenceUsage: true}
	root.AddCommand(registerCmd(), unregisterCmd(), statusCmd())
	if err := root.ExecuteContext(context.Background()); err != nil {
		os.Exit(1)
	}
}

func registerCmd() *cobra.Command {
	var m mgmtFlags
	var kubeconfig, kctx, server string
	var ttl time.Duration
	var watch, oldWatch, images, s3Endpoints []string
	var clusterWide, rotate bool
	var rotateBefore time.Duration
	c := &cobra.Command{
		Use:   "register NAME (--namespaces=a,b | --cluster-wide)",
		Short: "Install etcdfleet's CRDs and least-privilege RBAC in a workload cluster and register it by Secret (again: rotates the token)",
		Long: `Install etcdfleet's CRDs, the manager's ServiceAccount, RBAC and admission
policies in a workload cluster, mint an expiring token of that
ServiceAccount and register the cluster with a Secret holding it on the
management cluster. Run it again to rotate the token.

Where the manager may act is always your choice, on every run:
  --namespaces=a,b  its role is bound by a RoleBinding in each of these
                    namespaces only (recommended);
  --cluster-wide    its role is bound in every namespace: the token can then
                    get any Secret of the cluster by name and port-forward
                    into any Pod.
Either way only reading the kube-system Namespace, the cluster's identity,
is granted cluster-wide besides.

--allow-token-rotation lets the manager rotate the token itself before it
expires, unattended: the ServiceAccount may then mint tokens of itself
only, each bound to a registration Secret (so unregister still revokes
them all), for this apiserver, for at most 90 days. The management side
needs the etcdfleet chart's tokenRotation.enabled. Without the flag, a run
removes that right again.`,
		Example: `  etcdfleetctl register prod-eu-1 --namespaces=etcd --kubeconfig prod-eu-1.kubeconfig --mgmt-kubeconfig mgmt.kubeconfig`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := ctl.RegisterOptions{Name: args[0], Namespace: m.namespace, TokenDuration: ttl,
				WatchNamespaces: append(watch, oldWatch...), ClusterWide: clusterWide, AllowedImages: images, AllowedS3Endpoints: s3Endpoints, Server: server,
				AllowTokenRotation: rotate, RotateBefore: rotateBefore,
				Out: cmd.OutOrStdout(), Warnings: cmd.ErrOrStderr()}
			// The scope first: a missing choice is refused before any
			// kubeconfig is read.
			if err := o.Validate(); err != nil {
				return err
			}
			var err error
			if o.Workload, err = ctl.RESTConfig(kubeconfig, kctx); err != nil {
				return err
			}
			if o.Management, err = m.config(); err != nil {
				return err
			}
			return ctl.Register(cmd.Context(), o)
		},
	}
	c.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the workload cluster, with rights to install CRDs and RBAC (default $KUBECONFIG or ~/.kube/config)")
	c.Flags().StringVar(&kctx, "context", "", "context of the workload cluster in that kubeconfig")
	c.Flags().StringVar(&server, "server", "", "workload apiserver URL as the manager reaches it (default: the one in --kubeconfig)")
	c.Flags().DurationVar(&ttl, "token-duration", ctl.DefaultTokenDuration,
		"lifetime asked for the minted ServiceAccount token (the apiserver may grant less); re-run register before it expires to rotate it, which revokes the previous token")
	c.Flags().StringSliceVar(&watch, "namespaces", nil,
		"namespaces of the workload cluster the manager may act in, which must exist: a RoleBinding in each, and its caches scoped to them; this or --cluster-wide is required (not -n/--namespace, the registration Secret's namespace on the management cluster)")
	// The old name still works, so that scripts written for it keep the
	// narrow scope they asked for; cobra says it is deprecated on use.
	c.Flags().StringSliceVar(&oldWatch, "watch-namespaces", nil, "old name of --namespaces")
	_ = c.Flags().MarkDeprecated("watch-namespaces", "use --namespaces")
	c.Flags().BoolVar(&clusterWide, "cluster-wide", false,
		"grant the manager its rights in every namespace (a ClusterRoleBinding): the token can then get any Secret by name and port-forward into any Pod; this or --namespaces is required")
	c.Flags().BoolVar(&rotate, "allow-token-rotation", false,
		"let the manager rotate this token before it expires: grants the ServiceAccount tokens of itself only, bound to a registration Secret (unregister revokes them), for at most 90 days; the etcdfleet chart needs tokenRotation.enabled. Without it, register removes that grant")
	c.Flags().DurationVar(&rotateBefore, "rotate-before", 0,
		"with --allow-token-rotation, rotate once less than this is left (default: a third of the token's lifetime)")
	c.Flags().StringSliceVar(&images, "allowed-images", nil,
		"image repositories whose every tag the admission policy lets etcdfleet's Pods run, replacing the default (etcdfleet's own); list your mirror of the manager's agentImage. etcd's official images are admitted at the supported versions regardless, and refused here")
	c.Flags().StringSliceVar(&s3Endpoints, "allowed-s3-endpoints", nil,
		"S3 endpoint hosts (a name or IP, exactly) or CIDRs that EtcdClusters and EtcdSnapshots may name although the admission policies refuse them by default: loopback, link-local, unspecified and cloud metadata addresses. Snapshot Jobs send the whole keyspace and the S3 credentials there")
	m.bind(c)
	return c
}

func unregisterCmd() *cobra.Command {
	var m mgmtFlags
	var removeRBAC, revoke, keepOrphans, deleteClaims bool
	var kubeconfig, kctx string
	c := &cobra.Command{
		Use:   "unregister NAME",
		Short: "Delete a cluster's registration Secret (the manager disengages it), revoke its token and remove what it left behind",
		Long: `Delete the cluster's registration Secret on the management cluster, so the
manager disengages it; with the workload cluster's kubeconfig (the
default), revoke the registered token there by deleting the Secrets it is
bound to, which also revokes every token rotated from it; then remove the
orphans the token may have created, printing each.

` + ctl.OrphanDefinition + `.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			mg, err := m.config()
			if err != nil {
				return err
			}
			o := ctl.UnregisterOptions{Name: args[0], Management: mg, Namespace: m.namespace, Out: cmd.OutOrStdout()}
			if revoke || removeRBAC {
				if o.Workload, err = ctl.RESTConfig(kubeconfig, kctx); err != nil {
					return err
				}
			}
			o.RemoveRBAC, o.KeepOrphans, o.DeleteOrphanedClaims = removeRBAC, keepOrphans, deleteClaims
			return ctl.Unregister(cmd.Context(), o)
		},
	}
	c.Flags().BoolVar(&revoke, "revoke", true, "revoke the registered token on the workload cluster (needs --kubeconfig/--context of it); --revoke=false leaves it valid until it expires")
	c.Flags().BoolVar(&keepOrphans, "keep-orphans", false, "do not remove the orphans (see above) after revoking the token")
	c.Flags().BoolVar(&deleteClaims, "delete-orphaned-claims", false, "also delete orphaned PersistentVolumeClaims, whose volumes may hold data (listed and kept otherwise)")
	c.Flags().BoolVar(&removeRBAC, "remove-workload-rbac", false, "also remove the manager's ServiceAccount, RBAC and admission policy from the workload cluster")
	c.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the workload cluster, with rights to delete Secrets in etcdfleet-system (default $KUBECONFIG or ~/.kube/config)")
	c.Flags().StringVar(&kctx, "context", "", "context of the workload cluster in that kubeconfig")
	m.bind(c)
	return c
}

func statusCmd() *cobra.Command {
	var m mgmtFlags
	var output string
	c := &cobra.Command{
		Use:   "status",
		Short: "Show the fleet summary and one row per registered cluster",
		Long: `Show the Fleet and the FleetClusters of --namespace as kubectl get fleet and
kubectl get fleetclusters show them: the columns are the CRDs' printer
columns, rendered by the apiserver. -o wide adds the columns kubectl shows
only with -o wide; -o json and -o yaml print the Fleet's status and the
FleetCluster objects instead.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			mg, err := m.config()
			if err != nil {
				return err
			}
			return ctl.Status(cmd.Context(), mg, m.namespace, output, cmd.OutOrStdout())
		},
	}
	c.Flags().StringVarP(&output, "output", "o", "", "output format: wide, json or yaml (default: the tables of kubectl get)")
	m.bind(c)
	return c
}
