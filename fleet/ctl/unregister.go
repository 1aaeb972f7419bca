package ctl

import (
	"context"
	"fmt"
	"io"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/config"
)

// UnregisterOptions configure Unregister.
type UnregisterOptions struct {
	Name       string
	Management *rest.Config
	Namespace  string
	// Workload, when set, revokes the registered token there (deleting the
	// Secret it is bound to).
	Workload *rest.Config
	// KeepOrphans skips removing the orphans (OrphanDefinition) after the
	// token is revoked; DeleteOrphanedClaims deletes orphaned claims too.
	KeepOrphans, DeleteOrphanedClaims bool
	// RemoveRBAC also removes the manager's ServiceAccount, RBAC bindings
	// and admission policy from Workload (the CRDs and etcd clusters stay).
	RemoveRBAC bool
	Out        io.Writer
}

// Unregister deletes the registration Secret; the manager then disengages
// the cluster and its FleetCluster goes with the Secret.
func Unregister(ctx context.Context, o UnregisterOptions) error {
	mg, err := client.New(o.Management, client.Options{})
	if err != nil {
		return explain("management cluster", err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name}}
	if err := mg.Delete(ctx, s); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return fmt.Errorf("cluster %q is not registered (no Secret %s/%s)", o.Name, o.Namespace, o.Name)
		}
		return explain("management cluster", err)
	}
	fmt.Fprintf(o.Out, "deleted Secret %s/%s: the cluster is disengaged\n", o.Namespace, o.Name)
	if o.Workload == nil {
		return nil
	}
	wl, err := client.New(o.Workload, client.Options{})
	if err != nil {
		return explain("workload cluster", err)
	}
	revoked, err := revokeTokens(ctx, wl, o.Name, nil)
	if err != nil {
		return explain("workload cluster", err)
	}
	if len(revoked) == 0 {
		// Most likely the wrong cluster: the token stays valid, which must
		// not pass for success (security review L7). Nothing is removed
		// from a cluster that may not be the one registered.
		return fmt.Errorf("found no token of %s to revoke on the workload cluster (is --kubeconfig the cluster it was registered "+
			"with?): the registration Secret is deleted, but its token stays valid until it expires or its bound Secret in %s "+
			"is deleted on the right cluster (etcdfleetctl unregister %s --kubeconfig <that cluster>)", o.Name, WorkloadNamespace, o.Name)
	}
	fmt.Fprintf(o.Out, "revoked the token: removed Secret %s/%s, which it was bound to, from the workload cluster\n", WorkloadNamespace, strings.Join(revoked, ", "))
	// After the revocation, so that nothing the token could still do
	// re-creates what is removed.
	if !o.KeepOrphans {
		if _, err := RemoveOrphans(ctx, wl, OrphanOptions{DeleteClaims: o.DeleteOrphanedClaims, Out: o.Out}); err != nil {
			return explain("workload cluster", fmt.Errorf("the token is revoked, but removing what it may have created failed (run unregister's cleanup again with the same flags): %w", err))
		}
	}
	if !o.RemoveRBAC {
		return nil
	}
	if err := removeRoleBindings(ctx, wl, nil); err != nil {
		return explain("workload cluster", err)
	}
	if err := removeTokenRotation(ctx, wl); err != nil {
		return explain("workload cluster", err)
	}
	for _, obj := range append(admissionObjects(),
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: WorkloadClusterRole}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: WorkloadClusterRole}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: WorkloadIdentityRole}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: WorkloadIdentityRole}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: WorkloadNamespace, Name: WorkloadSA}},
	) {
		if err := client.IgnoreNotFound(wl.Delete(ctx, obj)); err != nil {
			return explain("workload cluster", err)
		}
	}
	fmt.Fprintf(o.Out, "removed the manager's ServiceAccount, RBAC and admission policy from the workload cluster\n")
	return nil
}

// Names of config/rbac/workload: the manager's ClusterRole and its
// bindings, the identity ClusterRole and its binding (same name), and the
// admission policies with their bindings.
const (
	WorkloadClusterRole  = "etcdfleet-workload"
	WorkloadIdentityRole = "etcdfleet-workload-identity"
	PodsPolicy           = "etcdfleet-workload-pods"
)

// admissionObjects are the admission policies and bindings register
// applies, bindings first, so no policy is left bound to nothing.
func admissionObjects() []client.Object {
	var policies, bindings []client.Object
	for _, o := range config.AdmissionObjects() {
		meta := metav1.ObjectMeta{Name: o.Name}
		switch o.Kind {
		case "ValidatingAdmissionPolicyBinding":
			bindings = append(bindings, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: meta})
		case "ValidatingAdmissionPolicy":
			policies = append(policies, &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: meta})
		}
	}
	return append(bindings, policies...)
}
