package ctl_test

import (
	"bytes"
	"context"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/ctl"
)

// The scope is always the caller's choice: a stolen token acts with the
// manager's role wherever register bound it, and cluster-wide that is any
// Secret by name and port-forwarding into any Pod.
var _ = Describe("register's scope", func() {
	// nowhere would fail any request: a refusal through it was decided
	// before contacting a cluster.
	nowhere := &rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second}

	It("refuses to choose for the caller, naming both choices", func(ctx SpecContext) {
		for _, o := range []ctl.RegisterOptions{
			{Name: "scope", Workload: nowhere},
			{Name: "scope", Workload: nowhere, WatchNamespaces: []string{"", " "}},
		} {
			_, err := registerWith(ctx, o)
			Expect(err).To(MatchError(ctl.ErrNoScope))
			Expect(err.Error()).To(And(ContainSubstring("--namespaces=a,b"), ContainSubstring("--cluster-wide"),
				ContainSubstring("any Secret by name and port-forward into any Pod")))
		}
		_, err := fleet.Cluster("mgmt").Clientset.CoreV1().Secrets(ns).Get(ctx, "scope", metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing registered")
	}, SpecTimeout(time.Minute))

	It("refuses both scopes", func(ctx SpecContext) {
		_, err := registerWith(ctx, ctl.RegisterOptions{Name: "scope", Workload: nowhere, ClusterWide: true, WatchNamespaces: []string{"team-a"}})
		Expect(err).To(MatchError(ctl.ErrBothScopes))
		Expect(err.Error()).To(And(ContainSubstring("--namespaces"), ContainSubstring("--cluster-wide")))
	}, SpecTimeout(time.Minute))
})

var _ = Describe("register's scope on the workload cluster", Ordered, func() {
	const name = "scoped"
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: ctl.WorkloadSA, Namespace: ctl.WorkloadNamespace}

	// clusterBindings names the ClusterRoleBindings that grant the
	// manager's ServiceAccount anything.
	clusterBindings := func(ctx context.Context) []string {
		list, err := fleet.Cluster("w1").Clientset.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		var names []string
		for _, b := range list.Items {
			if slices.Contains(b.Subjects, sa) {
				names = append(names, b.Name)
			}
		}
		return names
	}

	It("warns what cluster-wide grants, on the warnings writer", func(ctx SpecContext) {
		var warnings bytes.Buffer
		out, err := registerWith(ctx, ctl.RegisterOptions{Name: name, ClusterWide: true, Warnings: &warnings})
		Expect(err).NotTo(HaveOccurred())
		Expect(warnings.String()).To(Equal(ctl.ClusterWideWarning + "\n"))
		Expect(ctl.ClusterWideWarning).To(And(ContainSubstring("any Secret of the cluster by name"),
			ContainSubstring("port-forward into any Pod"), ContainSubstring("--namespaces")))
		Expect(out).NotTo(ContainSubstring("WARNING"), "not on Out when Warnings is given")
		Expect(clusterBindings(ctx)).To(ConsistOf(ctl.WorkloadClusterRole, ctl.WorkloadIdentityRole))
	}, SpecTimeout(time.Minute))

	It("binds nothing cluster-wide in namespaced mode but the identity read", func(ctx SpecContext) {
		wl := fleet.Cluster("w1").Clientset
		for _, n := range []string{"team-a", "team-b"} {
			_, err := wl.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
			if !apierrors.IsAlreadyExists(err) {
				Expect(err).NotTo(HaveOccurred())
			}
		}
		out, err := registerWith(ctx, ctl.RegisterOptions{Name: name, WatchNamespaces: []string{"team-b", "team-a"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(out).NotTo(ContainSubstring("WARNING"))
		Expect(annotations(ctx, name)).To(HaveKeyWithValue(fleetv1.WatchNamespacesAnnotation, "team-a,team-b"), "what the manager's provider reads")

		_, err = wl.RbacV1().ClusterRoleBindings().Get(ctx, ctl.WorkloadClusterRole, metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the cluster-wide grant of the earlier registration is gone: %v", err)
		Expect(clusterBindings(ctx)).To(ConsistOf(ctl.WorkloadIdentityRole))
		for _, n := range []string{"team-a", "team-b"} {
			rb, err := wl.RbacV1().RoleBindings(n).Get(ctx, ctl.WorkloadClusterRole, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred(), "a RoleBinding in %s", n)
			Expect(rb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ctl.WorkloadClusterRole}))
			Expect(rb.Subjects).To(ConsistOf(sa))
		}
		cfg := registered(ctx, name)
		Expect(can(ctx, cfg, "get", "", "secrets", "", "team-b")).To(BeTrue())
		Expect(can(ctx, cfg, "get", "", "secrets", "", "default")).To(BeFalse(), "no Secret outside the namespaces")
		Expect(can(ctx, cfg, "create", "", "pods", "portforward", "default")).To(BeFalse(), "no port-forward outside them")
		Expect(can(ctx, cfg, "list", "", "pods", "", "")).To(BeFalse(), "nothing cluster-wide")
		// Items 3 and 4 of the escalation report, as real requests: the
		// cloud credentials in kube-system, and port-forward into it.
		_, err = wl.CoreV1().Secrets("kube-system").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cloud-config"}}, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
		stolen, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		_, err = stolen.CoreV1().Secrets("kube-system").Get(ctx, "cloud-config", metav1.GetOptions{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the stolen token reads kube-system/cloud-config: %v", err)
		Expect(can(ctx, cfg, "create", "", "pods", "portforward", "kube-system")).To(BeFalse(), "no port-forward into kube-system")
		Expect(can(ctx, cfg, "get", "", "pods", "portforward", "kube-system")).To(BeFalse(), "nor over WebSocket")
		engagesWithIdentity(ctx, cfg, "team-a", "team-b")
	}, SpecTimeout(time.Minute))

	AfterAll(func(ctx SpecContext) {
		var out bytes.Buffer
		Expect(ctl.Unregister(ctx, ctl.UnregisterOptions{Name: name, Management: fleet.Cluster("mgmt").Config, Namespace: ns,
			Workload: fleet.Cluster("w1").Config, Out: &out})).To(Succeed())
	}, NodeTimeout(time.Minute))
})
