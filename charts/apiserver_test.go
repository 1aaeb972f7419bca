package charts_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

// TestOnAPIServer installs both charts on real kube-apiservers (one sandbox:
// a management cluster and a workload cluster) and proves, as the charts'
// ServiceAccounts, that the RBAC allows what the manager needs and nothing
// around it; then runs the manager with exactly those identities through a
// reboot of the workload cluster.
func TestOnAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("needs kube-apiservers (test/sandbox)")
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set, so there is no kube-apiserver to install the charts on. " +
			"Run `make test`, or export KUBEBUILDER_ASSETS=\"$(test/tools/assets.sh)\" before `go test`.")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	// Render first: a template error needs no apiserver.
	mgmtObjs := mustTemplate(t, mgmtChart, mgmtRelease, systemNS)
	// The workload chart goes in as a second release beside the plain
	// manifests of config/rbac/workload, so both are checked for real;
	// cluster-wide, as those bind, so that the checks below in every
	// namespace hold for both.
	const wlRelease, wlNS = "wl", "wl-system"
	wlObjs := mustTemplate(t, workloadChart, wlRelease, wlNS, "--set", "clusterWide=true")
	cfgObjs := configRBAC(t)

	start := time.Now()
	f, err := sandbox.Start(ctx, sandbox.Options{Clusters: []string{"mgmt", "w1"}, Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	t.Logf("sandbox up in %s", time.Since(start).Round(time.Millisecond))
	mgmt, w1 := f.Cluster("mgmt"), f.Cluster("w1")
	mc, wc := adminClient(t, mgmt.Config), adminClient(t, w1.Config)

	t.Run("install notes", func(t *testing.T) {
		kc := filepath.Join(t.TempDir(), "mgmt.kubeconfig")
		if err := os.WriteFile(kc, mgmt.Kubeconfig, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := runHelm(t, "install", mgmtRelease, chartDir(mgmtChart), "--namespace", systemNS, "--dry-run=client", "--kubeconfig", kc)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			"kubectl create secret generic w1 -n " + regNS + " --from-file=kubeconfig=./w1.kubeconfig && " +
				"kubectl label secret w1 -n " + regNS + " etcdfleet.io/cluster-kubeconfig=true",
			"etcdfleetctl register",
			"kubectl get fleetclusters -n " + regNS,
			"bind your\nscraper's ServiceAccount to the ClusterRole etcdfleet-metrics-reader",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("NOTES lack %q:\n%s", want, out)
			}
		}
		out, err = runHelm(t, "install", workloadRelease, chartDir(workloadChart), "--namespace", systemNS, "--dry-run=client", "--kubeconfig", kc,
			"--set", "clusterWide=true")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"etcdfleetctl register w1", "kubectl create token etcdfleet -n etcdfleet-system --bound-object-kind=Secret --bound-object-name=etcdfleet-w1-binding --duration=720h"} {
			if !strings.Contains(out, want) {
				t.Errorf("workload NOTES do not show how to get a token (%q):\n%s", want, out)
			}
		}
		// Cluster-wide is a choice made knowingly: the notes say what it
		// grants, and register is told the same scope.
		for _, want := range []string{"WARNING: clusterWide=true", "get any Secret of the cluster by name", "port-forward\ninto any Pod",
			"--mgmt-kubeconfig mgmt.kubeconfig --cluster-wide\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("cluster-wide workload NOTES lack %q:\n%s", want, out)
			}
		}
	})
	ok := t.Run("management chart", func(t *testing.T) {
		installCRDs(ctx, t, mc, filepath.Join(chartDir(mgmtChart), "crds"))
		createNamespace(ctx, t, mc, systemNS, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
		createNamespace(ctx, t, mc, "other", nil)
		apply(ctx, t, mc, mgmtObjs)
		podSecurity(ctx, t, mc, mgmtObjs)

		sa := saClientset(ctx, t, mgmt, systemNS, saName)
		expectAccess(ctx, t, sa, regNS, true, mgmtNamespacedPerms...)
		expectAccess(ctx, t, sa, "", true, mgmtClusterPerms...)
		// Nothing of the registration namespace elsewhere, Events
		// included, nor in the release namespace with its Helm release
		// Secrets; and no Secret writes at all.
		expectAccess(ctx, t, sa, "other", false, mgmtNamespacedPerms...)
		expectAccess(ctx, t, sa, "default", false, perms("", "events", "create")...)
		expectAccess(ctx, t, sa, systemNS, false, mgmtNamespacedPerms...)
		expectAccess(ctx, t, sa, "", false, join(
			perms("", "secrets", "get", "list", "watch"),
			perms("coordination.k8s.io", "leases", "get", "create", "update"),
			perms(fleetGroup, "fleetclusters", "create", "update", "delete"),
			perms(fleetGroup, "fleetclusters/status", "update"),
			perms(fleetGroup, "fleets", "update", "patch", "delete"),
			perms("", "nodes", "get", "list", "delete"),
			perms("apiextensions.k8s.io", "customresourcedefinitions", "create", "update", "delete"),
			perms("rbac.authorization.k8s.io", "clusterroles", "create", "bind", "escalate"),
		)...)
		expectAccess(ctx, t, sa, regNS, false, join(
			perms("", "secrets", "create", "update", "patch", "delete", "deletecollection"),
			perms("", "configmaps", "get", "list"),
			perms("", "pods", "get", "list"),
			perms("", "serviceaccounts/token", "create"),
			perms("coordination.k8s.io", "leases", "deletecollection"),
			perms(fleetGroup, "fleetclusters", "patch", "deletecollection"),
			perms("rbac.authorization.k8s.io", "roles", "create", "update"),
		)...)

		// Real requests agree.
		mustCreate(ctx, t, mc, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "not-yours"}})
		mustCreate(ctx, t, mc, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: systemNS, Name: "sh.helm.release.v1.etcdfleet.v1"}})
		if _, err := sa.CoreV1().Secrets(regNS).List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("list Secrets in %s: %v", regNS, err)
		}
		forbidden(t, "get a Secret in another namespace", ignore(sa.CoreV1().Secrets("other").Get(ctx, "not-yours", metav1.GetOptions{})))
		forbidden(t, "get Helm's release Secret", ignore(sa.CoreV1().Secrets(systemNS).Get(ctx, "sh.helm.release.v1.etcdfleet.v1", metav1.GetOptions{})))
		forbidden(t, "list Secrets cluster-wide", ignore(sa.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})))
		forbidden(t, "delete a Node", sa.CoreV1().Nodes().Delete(ctx, "node-0", metav1.DeleteOptions{}))
	})
	ok = t.Run("workload RBAC", func(t *testing.T) {
		installCRDs(ctx, t, wc, filepath.Join(chartDir(workloadChart), "crds"))
		createNamespace(ctx, t, wc, wlNS, nil)
		createNamespace(ctx, t, wc, "etcd", nil)
		apply(ctx, t, wc, cfgObjs) // creates etcdfleet-system
		apply(ctx, t, wc, wlObjs)
		for _, ns := range []string{systemNS, wlNS} {
			sa := saClientset(ctx, t, w1, ns, saName)
			for _, where := range []string{"", "etcd"} {
				expectAccess(ctx, t, sa, where, true, workloadPerms...)
				expectAccess(ctx, t, sa, where, false, join(
					perms("", "secrets", "list", "watch", "create", "update", "patch", "delete"),
					perms("", "configmaps", "get", "list", "watch", "create", "update", "delete"),
					perms("apps", "deployments", "get", "list", "create", "update", "delete"),
					perms("apps", "statefulsets", "get", "create"),
					perms(etcdGroup, "etcdclusters", "create", "update", "patch", "delete"),
					perms(etcdGroup, "etcdmembers", "update", "deletecollection"),
					perms("", "pods", "update", "deletecollection"),
					perms("", "pods/exec", "create", "get"),
					perms("", "pods/log", "get"),
					perms("", "pods/eviction", "create"),
					perms("", "persistentvolumeclaims", "update", "patch", "delete"),
					perms("", "services", "update", "delete"),
					perms("policy", "poddisruptionbudgets", "update"),
					perms("", "serviceaccounts/token", "create"),
					perms("rbac.authorization.k8s.io", "roles", "create", "bind"),
				)...)
			}
			expectAccess(ctx, t, sa, "", false, join(
				perms("", "nodes", "get", "list", "delete"),
				perms("", "namespaces", "create", "delete"),
				perms("apiextensions.k8s.io", "customresourcedefinitions", "create", "update", "delete"),
				perms("rbac.authorization.k8s.io", "clusterroles", "create", "bind", "escalate"),
			)...)
			// The provider's own pre-flight checks, as it asks them, and
			// none of the escalations it reports as OverPrivileged.
			expectAccess(ctx, t, sa, "", true, preflightPerms()...)
			expectAccess(ctx, t, sa, "", false, escalationPerms()...)
			expectAccess(ctx, t, sa, "etcd", false, escalationPerms()...)
			// The identity role reads the kube-system Namespace only.
			expectAccess(ctx, t, sa, "", true, identityPerms...)
			expectAccess(ctx, t, sa, "", false, append(perms("", "namespaces", "get", "list", "watch"),
				perm{resource: "namespaces", verb: "get", name: "default"},
				perm{resource: "namespaces", verb: "update", name: "kube-system"})...)

			mustCreate(ctx, t, wc, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "etcd", Name: "tls-" + ns}})
			if _, err := sa.CoreV1().Secrets("etcd").Get(ctx, "tls-"+ns, metav1.GetOptions{}); err != nil {
				t.Errorf("%s: get a TLS Secret by name: %v", ns, err)
			}
			forbidden(t, ns+": list Secrets", ignore(sa.CoreV1().Secrets("etcd").List(ctx, metav1.ListOptions{})))
			forbidden(t, ns+": list Secrets cluster-wide", ignore(sa.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})))
			forbidden(t, ns+": list ConfigMaps", ignore(sa.CoreV1().ConfigMaps("etcd").List(ctx, metav1.ListOptions{})))
			forbidden(t, ns+": list Deployments", ignore(sa.AppsV1().Deployments("etcd").List(ctx, metav1.ListOptions{})))
		}
	}) && ok
	ok = t.Run("admission policy", func(t *testing.T) {
		// config/rbac/workload's, as etcdfleetctl register applies it, and
		// the chart's, each guarding its own ServiceAccount.
		admissionPolicyHolds(ctx, t, w1, wc, systemNS, "etcdfleet-workload")
		admissionPolicyHolds(ctx, t, w1, wc, wlNS, wlRelease+"-etcdfleet-workload")
		escalationsRefused(ctx, t, w1, wc, systemNS, "etcdfleet-workload")
		escalationsRefused(ctx, t, w1, wc, wlNS, wlRelease+"-etcdfleet-workload")
	}) && ok
	if !ok {
		return
	}
	// With the admission policy of config/rbac/workload in force.
	t.Run("manager with the charts' identities heals a reboot", func(t *testing.T) {
		managerHealsReboot(ctx, t, f, mc, wc)
	})
}
