package ctl

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
)

// clusterID reads the workload cluster's identity exactly as the manager
// does (kubeconfigsecret.KubeSystemUID): its kube-system Namespace's UID.
func clusterID(ctx context.Context, workload *rest.Config) (string, error) {
	id, err := kubeconfigsecret.KubeSystemUID(ctx, workload)
	if err != nil {
		return "", explain("workload cluster", fmt.Errorf("read the kube-system Namespace to identify the cluster: %w", err))
	}
	return id, nil
}

// refuseDuplicate refuses to register, under name, a cluster that another
// registration Secret of the namespace already registers: one whose Secret
// etcdfleetctl annotated with the same identity, or whose FleetCluster
// shows it (the manager read it in pre-flight, however the Secret was
// written). Registering the same name again (rotating its token) is fine.
// It returns the cluster's identity, for recordClusterID.
func refuseDuplicate(ctx context.Context, workload *rest.Config, mg client.Client, ns, name string) (string, error) {
	id, err := clusterID(ctx, workload)
	if err != nil {
		return "", err
	}
	others, err := registeredAs(ctx, mg, ns, id)
	if err != nil {
		return "", explain("management cluster", err)
	}
	delete(others, name)
	if len(others) == 0 {
		return id, nil
	}
	names := make([]string, 0, len(others))
	for n := range others {
		names = append(names, ns+"/"+n)
	}
	sort.Strings(names)
	return "", fmt.Errorf("this workload cluster (kube-system Namespace UID %s) is already registered by Secret %s; "+
		"a cluster is registered once: re-run register with that name to rotate its token, or unregister it first", id, names[0])
}

// registeredAs returns the names of the registrations of ns whose cluster
// has identity id.
func registeredAs(ctx context.Context, mg client.Client, ns, id string) (map[string]bool, error) {
	out := map[string]bool{}
	var secrets corev1.SecretList
	if err := mg.List(ctx, &secrets, client.InNamespace(ns), client.MatchingLabels{fleetv1.RegistrationLabel: "true"}); err != nil {
		return nil, err
	}
	for _, s := range secrets.Items {
		if s.Annotations[fleetv1.ClusterIDAnnotation] == id {
			out[s.Name] = true
		}
	}
	// FleetClusters, read unstructured: the CLI's client knows only the
	// built-in kinds. Without the CRD (no manager installed yet) there are
	// none to compare with.
	rows := &unstructured.UnstructuredList{}
	rows.SetGroupVersionKind(fleetv1.GroupVersion.WithKind("FleetClusterList"))
	err := mg.List(ctx, rows, client.InNamespace(ns))
	if meta.IsNoMatchError(err) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, r := range rows.Items {
		if got, _, _ := unstructured.NestedString(r.Object, "status", "clusterID"); got == id {
			out[r.GetName()] = true
		}
	}
	return out, nil
}

// recordClusterID annotates the registration Secret with the cluster's
// identity, for refuseDuplicate's next run.
func recordClusterID(ctx context.Context, mg client.Client, ns, name, id string) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, fleetv1.ClusterIDAnnotation, id)
	return mg.Patch(ctx, s, client.RawPatch("application/merge-patch+json", patch))
}
