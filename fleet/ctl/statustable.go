package ctl

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
)

// tableAccept asks the apiserver to render a list or object as a
// meta.k8s.io/v1 Table of the resource's printer columns, as kubectl get
// does. The CRDs' kubebuilder:printcolumn markers are then the one column
// list: a column added there shows up here without a change to this
// package, and the two views cannot disagree.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io"

// printTables prints the Fleet's table (skipped while the manager has not
// created the Fleet yet), a blank line, then the FleetClusters' table.
func printTables(ctx context.Context, mgmt *rest.Config, namespace string, wide bool, out io.Writer) error {
	rc, err := fleetREST(mgmt)
	if err != nil {
		return explain("management cluster", err)
	}
	fleet, err := getTable(ctx, rc.Get().Resource("fleets").Name(fleetv1.FleetName))
	switch {
	case err == nil:
		if err := printTable(out, fleet, wide); err != nil {
			return err
		}
		fmt.Fprintln(out)
	case !apierrors.IsNotFound(err):
		return explain("management cluster", err)
	}
	clusters, err := getTable(ctx, rc.Get().Namespace(namespace).Resource("fleetclusters"))
	if err != nil {
		return explain("management cluster", err)
	}
	if len(clusters.Rows) == 0 {
		// kubectl prints no header over no rows; say why the table is missing.
		_, err := fmt.Fprintf(out, "No FleetClusters found in %s namespace.\n", namespace)
		return err
	}
	return printTable(out, clusters, wide)
}

// fleetREST is a REST client of fleet.etcdfleet.io. client-go's scheme
// decodes the apiserver's Status errors, so NotFound stays recognisable.
func fleetREST(mgmt *rest.Config) (*rest.RESTClient, error) {
	cfg := rest.CopyConfig(mgmt)
	cfg.APIPath = "/apis"
	cfg.GroupVersion = &fleetv1.GroupVersion
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return rest.RESTClientFor(cfg)
}

// getTable sends req asking for a Table. includeObject=None because only
// the cells are printed: the rows then carry no object metadata.
func getTable(ctx context.Context, req *rest.Request) (*metav1.Table, error) {
	body, err := req.SetHeader("Accept", tableAccept).
		Param("includeObject", string(metav1.IncludeNone)).Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	// utiljson keeps integer cells int64 (encoding/json would make them
	// float64, printed as 1e+06 from a million on), as kubectl's decoder does.
	t := &metav1.Table{}
	if err := utiljson.Unmarshal(body, t); err != nil {
		return nil, fmt.Errorf("decoding the apiserver's Table: %w", err)
	}
	if t.Kind != "Table" {
		return nil, fmt.Errorf("the apiserver answered %q to a request for a Table (Accept: %s)", t.Kind, tableAccept)
	}
	return t, nil
}

// printTable prints t as kubectl's table printer does: the column names
// uppercased (NAME first, as the apiserver puts it first), columns of
// priority above 0 only when wide, nil cells empty, tab-aligned with
// kubectl's tabwriter widths (its RememberWidths flag, from a fork of
// text/tabwriter, only matters for -w, which status has not).
func printTable(out io.Writer, t *metav1.Table, wide bool) error {
	cols := t.ColumnDefinitions
	shown := func(i int) bool { return wide || cols[i].Priority == 0 }
	w := tabwriter.NewWriter(out, 6, 4, 3, ' ', 0)
	var head []string
	for i, c := range cols {
		if shown(i) {
			head = append(head, strings.ToUpper(c.Name))
		}
	}
	fmt.Fprintln(w, strings.Join(head, "\t"))
	for _, r := range t.Rows {
		var cells []string
		// A row with more cells than columns is the server's bug; like
		// kubectl, print what has a column rather than fail.
		for i := 0; i < len(r.Cells) && i < len(cols); i++ {
			if shown(i) {
				cells = append(cells, cellText(r.Cells[i]))
			}
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	return w.Flush()
}

// terminalEscaper keeps a status message from sending terminal escape
// sequences to the reader's terminal, as kubectl does (issue #101695).
var terminalEscaper = strings.NewReplacer("\x1b", "^[", "\r", `\r`)

// cellText renders one cell: nil (a JSONPath that found nothing) as
// empty, a multi-line string as its first line and "...", since a line
// break would end the tabwriter's row.
func cellText(v any) string {
	s, ok := v.(string)
	switch {
	case v == nil:
		return ""
	case !ok:
		s = fmt.Sprint(v)
	default:
		if i := strings.IndexAny(s, "\f\n\r"); i >= 0 {
			s = s[:i] + "..."
		}
	}
	return terminalEscaper.Replace(s)
}
