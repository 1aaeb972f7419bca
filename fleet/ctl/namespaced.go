package ctl

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/etcdfleet/etcdfleet/providers/kubeconfigsecret"
)

// bindingLabels mark the RoleBindings register creates in namespaced mode,
// so that it finds and removes the ones no longer wanted.
var bindingLabels = map[string]string{"app.kubernetes.io/name": "etcdfleet-workload", "app.kubernetes.io/part-of": "etcdfleet"}

// withoutClusterBinding drops the ClusterRoleBinding of WorkloadClusterRole
// from manifests: in namespaced mode that ClusterRole is bound per
// namespace instead. The identity role's binding (WorkloadIdentityRole)
// stays: no RoleBinding can grant reading the kube-system Namespace, which
// pre-flight needs in both modes.
func withoutClusterBinding(manifests [][]byte) ([][]byte, error) {
	out := make([][]byte, 0, len(manifests))
	for _, m := range manifests {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(m, &u.Object); err != nil {
			return nil, err
		}
		if u.GetKind() != "ClusterRoleBinding" || u.GetName() != WorkloadClusterRole {
			out = append(out, m)
		}
	}
	return out, nil
}

// bindRBAC grants the ClusterRole cluster-wide (namespaces empty) or in
// each of namespaces only, and removes the grants of the other mode and of
// namespaces no longer listed, so that re-registering switches modes.
func bindRBAC(ctx context.Context, wl client.Client, namespaces []string) error {
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: WorkloadClusterRole}}
	if len(namespaces) > 0 {
		if err := client.IgnoreNotFound(wl.Delete(ctx, crb)); err != nil {
			return err
		}
	}
	for _, ns := range namespaces {
		if err := wl.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); apierrors.IsNotFound(err) {
			return fmt.Errorf("watched namespace %q does not exist; create it first", ns)
		}
		rb := &rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: WorkloadClusterRole, Namespace: ns, Labels: bindingLabels},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: WorkloadClusterRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: WorkloadSA, Namespace: WorkloadNamespace}},
		}
		if err := wl.Patch(ctx, rb, client.Apply, client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("bind %s in namespace %s: %w", WorkloadClusterRole, ns, err)
		}
	}
	return removeRoleBindings(ctx, wl, namespaces)
}

// removeRoleBindings deletes register's RoleBindings outside keep.
func removeRoleBindings(ctx context.Context, wl client.Client, keep []string) error {
	var list rbacv1.RoleBindingList
	if err := wl.List(ctx, &list, client.MatchingLabels(bindingLabels)); err != nil {
		return err
	}
	for i := range list.Items {
		rb := &list.Items[i]
		if rb.Name == WorkloadClusterRole && !slices.Contains(keep, rb.Namespace) {
			if err := client.IgnoreNotFound(wl.Delete(ctx, rb)); err != nil {
				return err
			}
		}
	}
	return nil
}

// normalizeNamespaces drops blanks and duplicates and sorts, as the
// manager's provider reads the annotation.
func normalizeNamespaces(in []string) []string {
	return kubeconfigsecret.SplitNamespaces(strings.Join(in, ","))
}
