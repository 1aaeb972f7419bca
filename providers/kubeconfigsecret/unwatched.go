package kubeconfigsecret

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
)

// A namespaced registration (Options.NamespacesAnnotation) grants the
// controllers some namespaces only, and its caches hold nothing else. An
// object placed in another namespace is then neither reconciled nor
// refused: without a word, it waits forever. Options.Unwatched finds such
// namespaces, so that they show as a clear state instead.

// EventNamespacesNotGranted (Warning): a namespace the registration does
// not grant holds objects the controllers would manage.
const EventNamespacesNotGranted = "NamespacesNotGranted"

// checkUnwatched asks Options.Unwatched, for a namespaced registration,
// which other namespaces hold objects to manage, and reports a change (the
// state, a Warning Event when new ones appear, the metric). Nothing here
// fails a connection: a credential that may not look (a registration made
// before the grant existed) just reports nothing.
func (c *conn) checkUnwatched(ctx context.Context, cfg *rest.Config, namespaces []string) {
	f := c.p.opts.Unwatched
	if f == nil || len(namespaces) == 0 {
		return
	}
	qctx, cancel := context.WithTimeout(ctx, c.p.opts.PreflightTimeout)
	defer cancel()
	got, err := f(qctx, rest.CopyConfig(cfg), slices.Clone(namespaces))
	if err != nil {
		if !apierrors.IsForbidden(err) {
			c.log.V(1).Info("Could not look for namespaces the registration does not grant", "error", err.Error())
		}
		return
	}
	slices.Sort(got)
	got = slices.Compact(got)
	prev, _ := c.p.State(c.name)
	setUnwatched(c.p.opts.Namespace, c.name, len(got))
	c.p.update(c, func(st *ClusterState) { st.UnwatchedNamespaces = strings.Join(got, ", ") })
	if added := newIn(got, strings.Split(prev.UnwatchedNamespaces, ", ")); len(added) > 0 {
		msg := fmt.Sprintf("namespaces %s hold objects to manage, but the registration grants only %s: "+
			"register the cluster again with those namespaces in --namespaces, or bind the workload role there",
			strings.Join(added, ", "), strings.Join(namespaces, ", "))
		c.log.Info("Namespaces not granted hold objects to manage", "namespaces", added)
		c.p.event(c.name, corev1.EventTypeWarning, EventNamespacesNotGranted, msg)
	}
}

// newIn returns the elements of now that were not in before.
func newIn(now, before []string) []string {
	var out []string
	for _, n := range now {
		if !slices.Contains(before, n) {
			out = append(out, n)
		}
	}
	return out
}
