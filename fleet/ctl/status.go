package ctl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
)

// Dashboard is what `etcdfleetctl status -o json|yaml` prints.
type Dashboard struct {
	Fleet    *fleetv1.FleetStatus   `json:"fleet,omitempty"`
	Paused   bool                   `json:"paused"`
	Clusters []fleetv1.FleetCluster `json:"clusters"`
}

// Status prints the fleet summary and one row per registered cluster.
// output is "", "wide", "json" or "yaml".
func Status(ctx context.Context, mgmt *rest.Config, namespace, output string, out io.Writer) error {
	s := runtime.NewScheme()
	if err := fleetv1.AddToScheme(s); err != nil {
		return err
	}
	c, err := client.New(mgmt, client.Options{Scheme: s})
	if err != nil {
		return explain("management cluster", err)
	}
	d := Dashboard{}
	f := &fleetv1.Fleet{}
	switch err := c.Get(ctx, client.ObjectKey{Name: fleetv1.FleetName}, f); {
	case err == nil:
		d.Fleet, d.Paused = &f.Status, f.Spec.Paused
	case !apierrors.IsNotFound(err):
		return explain("management cluster", err)
	}
	var list fleetv1.FleetClusterList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return explain("management cluster", err)
	}
	d.Clusters = list.Items
	switch output {
	case "json":
		b, err := json.MarshalIndent(d, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, string(b))
		return err
	case "yaml":
		b, err := yaml.Marshal(d)
		if err != nil {
			return err
		}
		_, err = out.Write(b)
		return err
	case "", "wide":
		return printTables(out, d, output == "wide")
	}
	return fmt.Errorf("unknown output %q: want wide, json or yaml", output)
}

func printTables(out io.Writer, d Dashboard, wide bool) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if d.Fleet != nil {
		s := d.Fleet
		fmt.Fprintln(w, "FLEET\tPAUSED\tCLUSTERS\tCONNECTED\tQUORATE\tDEGRADED\tWAITING\tREPLACED\tLIMITER")
		fmt.Fprintf(w, "fleet\t%v\t%d\t%d\t%d\t%d\t%d\t%d\t%s burst %d\n\n", d.Paused, s.ClustersTotal, s.ClustersConnected,
			s.ClustersQuorate, s.ClustersDegraded, s.Limiter.Waiting, s.ReplacementsTotal, s.Limiter.Rate, s.Limiter.Burst)
	}
	head := "CLUSTER\tCONNECTED\tREADY\tPAUSED\tETCD\tQUORATE\tMEMBERS\tREPLACED\tTHROTTLED"
	if wide {
		head += "\tVERSION\tLAST PROBE\tMESSAGE"
	}
	fmt.Fprintln(w, head)
	for _, fc := range d.Clusters {
		st := fc.Status
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%d\t%d", fc.Name, cond(st, fleetv1.ConditionConnected), cond(st, fleetv1.ConditionReady),
			cond(st, fleetv1.ConditionPaused), st.EtcdClusters, st.QuorateEtcdClusters, st.MembersSummary, st.ReplacementsTotal, st.ReplacementsThrottled)
		if wide {
			probe := "-"
			if st.LastProbeTime != nil {
				probe = st.LastProbeTime.UTC().Format("15:04:05")
			}
			msg := st.Message
			if c := meta.FindStatusCondition(st.Conditions, fleetv1.ConditionConnected); msg == "" && c != nil {
				msg = c.Message
			}
			fmt.Fprintf(w, "\t%s\t%s\t%s", st.ServerVersion, probe, msg)
		}
		fmt.Fprintln(w)
	}
	return w.Flush()
}

func cond(st fleetv1.FleetClusterStatus, t string) string {
	if c := meta.FindStatusCondition(st.Conditions, t); c != nil {
		return string(c.Status)
	}
	return "Unknown"
}
