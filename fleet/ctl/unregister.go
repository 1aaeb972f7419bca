package ctl

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// UnregisterOptions configure Unregister.
type UnregisterOptions struct {
	Name       string
	Management *rest.Config
	Namespace  string
	// Workload, when set, also removes the manager's ServiceAccount and RBAC
	// there (the CRDs and etcd clusters stay).
	Workload *rest.Config
	Out      io.Writer
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
	for _, obj := range []client.Object{
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: WorkloadClusterRole}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: WorkloadClusterRole}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: WorkloadNamespace, Name: WorkloadSA}},
	} {
		if err := client.IgnoreNotFound(wl.Delete(ctx, obj)); err != nil {
			return explain("workload cluster", err)
		}
	}
	fmt.Fprintf(o.Out, "removed the manager's ServiceAccount and RBAC from the workload cluster\n")
	return nil
}

// WorkloadClusterRole names the manager's ClusterRole and its binding.
const WorkloadClusterRole = "etcdfleet-workload"
