package ctl

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/workload"
)

// OrphanDefinition is what unregister removes besides the token, in the
// words its help and the docs use: everything the registered credential
// may have created and that no etcdfleet owner holds. Whatever a stolen
// token created outside etcdfleet's owners survives its revocation, since
// garbage collection removes only what a live owner no longer holds.
const OrphanDefinition = "An orphan is an object of a kind the manager may create in the workload cluster " +
	"(Pods, Services, PersistentVolumeClaims, PodDisruptionBudgets, Jobs: every non-etcdfleet kind its role grants create on), " +
	"in any namespace, labelled " + etcdv1.ManagedBySelector + ", whose controller owner reference names no existing " +
	"EtcdCluster, EtcdMember, EtcdSnapshot or EtcdDefrag (by UID). Objects etcdfleet still manages are kept, " +
	"and so is every object without the label. Orphaned claims are listed but kept unless asked for: they may hold data"

// OrphanOptions configure RemoveOrphans.
type OrphanOptions struct {
	// DeleteClaims also deletes orphaned PersistentVolumeClaims, whose
	// volumes may hold etcd data (unregister --delete-orphaned-claims).
	DeleteClaims bool
	Out          io.Writer
}

// owners are the etcdfleet kinds whose controller references keep an
// object.
var owners = []schema.GroupVersionKind{
	etcdv1.GroupVersion.WithKind("EtcdCluster"), etcdv1.GroupVersion.WithKind("EtcdMember"),
	etcdv1.GroupVersion.WithKind("EtcdSnapshot"), etcdv1.GroupVersion.WithKind("EtcdDefrag"),
}

// RemoveOrphans deletes the orphans of the workload cluster (see
// OrphanDefinition), printing each, and lists the claims it keeps. It
// returns the number deleted.
func RemoveOrphans(ctx context.Context, wl client.Client, o OrphanOptions) (int, error) {
	live, err := liveOwners(ctx, wl)
	if err != nil {
		return 0, err
	}
	deleted := 0
	for _, gvk := range createdKinds(wl.RESTMapper()) {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := wl.List(ctx, list, client.MatchingLabels{etcdv1.LabelManagedBy: etcdv1.ManagedByValue}); err != nil {
			return deleted, fmt.Errorf("list %s: %w", gvk.Kind, err)
		}
		for i := range list.Items {
			obj := &list.Items[i]
			if ref := metav1.GetControllerOfNoCopy(obj); ref != nil && live[ref.UID] {
				continue
			}
			what := fmt.Sprintf("%s %s/%s", gvk.Kind, obj.Namespace, obj.Name)
			if gvk.Kind == "PersistentVolumeClaim" && !o.DeleteClaims {
				fmt.Fprintf(o.Out, "kept orphaned %s: it may hold data; delete it yourself, or run again with --delete-orphaned-claims\n", what)
				continue
			}
			uid := obj.UID
			if err := client.IgnoreNotFound(wl.Delete(ctx, obj, client.Preconditions{UID: &uid},
				client.PropagationPolicy(metav1.DeletePropagationBackground))); err != nil {
				return deleted, fmt.Errorf("delete orphaned %s: %w", what, err)
			}
			deleted++
			fmt.Fprintf(o.Out, "deleted orphaned %s (labelled %s, controlled by no etcdfleet object)\n", what, etcdv1.ManagedBySelector)
		}
	}
	return deleted, nil
}

// liveOwners are the UIDs of every existing EtcdCluster, EtcdMember,
// EtcdSnapshot and EtcdDefrag; a kind whose CRD is not installed has none.
func liveOwners(ctx context.Context, wl client.Client) (map[types.UID]bool, error) {
	live := map[types.UID]bool{}
	for _, gvk := range owners {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := wl.List(ctx, list); err != nil {
			if apimeta.IsNoMatchError(err) {
				continue
			}
			return nil, fmt.Errorf("list %s: %w", gvk.Kind, err)
		}
		for _, o := range list.Items {
			live[o.UID] = true
		}
	}
	return live, nil
}

// createdKinds are the kinds of workload.Permissions rows that grant
// create, but etcdfleet's own and Events: what the credential could have
// created that garbage collection does not remove on its own.
func createdKinds(m apimeta.RESTMapper) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, p := range workload.Permissions() {
		if p.Subresource != "" || p.Group == etcdv1.GroupVersion.Group || (p.Group == "" && p.Resource == "events") ||
			!slices.Contains(p.Verbs, "create") {
			continue
		}
		gvk, err := m.KindFor(schema.GroupVersionResource{Group: p.Group, Resource: p.Resource})
		if err != nil || slices.Contains(out, gvk) {
			continue
		}
		out = append(out, gvk)
	}
	slices.SortFunc(out, func(a, b schema.GroupVersionKind) int { return strings.Compare(a.Kind, b.Kind) })
	return out
}
