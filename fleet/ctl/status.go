package ctl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// Status prints the Fleet and the FleetClusters of namespace. output is
// "", "wide", "json" or "yaml". The tables are the apiserver's rendering
// of the CRDs' printer columns, exactly what `kubectl get fleet` and
// `kubectl get fleetclusters` show (see statustable.go); json and yaml
// print the objects themselves.
func Status(ctx context.Context, mgmt *rest.Config, namespace, output string, out io.Writer) error {
	switch output {
	case "", "wide":
		return printTables(ctx, mgmt, namespace, output == "wide", out)
	case "json", "yaml":
		d, err := dashboard(ctx, mgmt, namespace)
		if err != nil {
			return err
		}
		return printObjects(d, output, out)
	}
	return fmt.Errorf("unknown output %q: want wide, json or yaml", output)
}

// dashboard reads the Fleet (absent before the manager first reports) and
// the FleetClusters as typed objects, for -o json|yaml.
func dashboard(ctx context.Context, mgmt *rest.Config, namespace string) (Dashboard, error) {
	d := Dashboard{}
	s := runtime.NewScheme()
	if err := fleetv1.AddToScheme(s); err != nil {
		return d, err
	}
	c, err := client.New(mgmt, client.Options{Scheme: s})
	if err != nil {
		return d, explain("management cluster", err)
	}
	f := &fleetv1.Fleet{}
	switch err := c.Get(ctx, client.ObjectKey{Name: fleetv1.FleetName}, f); {
	case err == nil:
		d.Fleet, d.Paused = &f.Status, f.Spec.Paused
	case !apierrors.IsNotFound(err):
		return d, explain("management cluster", err)
	}
	var list fleetv1.FleetClusterList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return d, explain("management cluster", err)
	}
	d.Clusters = list.Items
	return d, nil
}

func printObjects(d Dashboard, output string, out io.Writer) error {
	if output == "json" {
		b, err := json.MarshalIndent(d, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, string(b))
		return err
	}
	b, err := yaml.Marshal(d)
	if err != nil {
		return err
	}
	_, err = out.Write(b)
	return err
}
