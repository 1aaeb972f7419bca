package charts_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/etcdfleet/etcdfleet/config"
	"github.com/etcdfleet/etcdfleet/fleet/ctl"
	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

// The S3 endpoints both installs below allow although they are refused by
// default: one host exactly, and a CIDR.
var testAllowedS3Endpoints = []string{"127.0.0.2", "fe80::/10"}

// TestReferencesNeedTheRequestersRights proves on a real kube-apiserver
// that the references policies hold, for config's policies as etcdfleetctl
// register applies them (--allowed-s3-endpoints) and then for the workload
// chart's (admissionPolicy.allowedS3Endpoints): an EtcdCluster or
// EtcdSnapshot naming a Secret, claim or EtcdSnapshot is admitted only
// from a user who may get it, an update that adds none needs no such
// right, the manager's ServiceAccount may create scheduled snapshots, and
// loopback, link-local and metadata S3 endpoints are refused unless
// allowed.
func TestReferencesNeedTheRequestersRights(t *testing.T) {
	if testing.Short() {
		t.Skip("needs kube-apiservers (test/sandbox)")
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: export KUBEBUILDER_ASSETS=\"$(test/tools/assets.sh)\" before `go test`.")
	}
	// The budget bounds a hang, not speed: at load 25 the test took 249 s.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	registered, err := ctl.AdmissionManifests(nil, testAllowedS3Endpoints)
	if err != nil {
		t.Fatal(err)
	}
	const release = "rt"
	chartPolicies := referencePolicies(mustTemplate(t, workloadChart, release, "rt-system", "--set", "clusterWide=true",
		"--set-json", `admissionPolicy.allowedS3Endpoints=["`+strings.Join(testAllowedS3Endpoints, `","`)+`"]`))
	if len(chartPolicies) != 4 {
		t.Fatalf("the chart renders %d references policies and bindings, want 4", len(chartPolicies))
	}

	f, err := sandbox.Start(ctx, sandbox.Options{Clusters: []string{"w1"}, Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	w1 := f.Cluster("w1")
	wc := adminClient(t, w1.Config)
	installCRDs(ctx, t, wc, filepath.Join(chartDir(workloadChart), "crds"))
	const ns = "team"
	createNamespace(ctx, t, wc, ns, nil)
	// Made before the policies: its endpoint would be refused now.
	mustCreate(ctx, t, wc, backupCluster(ns, "legacy", "s3-creds", "http://127.0.0.1:9000"))
	if err := config.Apply(ctx, wc, "etcdfleetctl", registered); err != nil {
		t.Fatalf("install as etcdfleetctl register does: %v", err)
	}
	users := teamUsers(ctx, t, wc, w1.Config, ns)

	t.Run("config, as register applies it", func(t *testing.T) {
		referencesHold(ctx, t, wc, users, ns, "etcdfleet-workload")
		// The manager creates the scheduled snapshots of spec.backup: it
		// may get the Secrets of the namespaces it manages.
		sa := adminClient(t, saConfig(ctx, t, w1, systemNS, saName))
		if err := sa.Create(ctx, s3Snapshot(ns, "scheduled", "s3-creds", "http://s3:8333"), client.DryRunAll); err != nil {
			t.Errorf("etcdfleet's ServiceAccount creating a scheduled EtcdSnapshot is refused: %v", err)
		}
	})
	for _, o := range referencePolicies(decodeManifests(t, registered)) {
		if err := wc.Delete(ctx, o); err != nil {
			t.Fatalf("remove config's %s: %v", o.GetName(), err)
		}
	}
	t.Run("chart", func(t *testing.T) {
		// Config's are gone from the admission informers first: then a
		// refusal below can only be the chart's.
		eventually(ctx, t, 30*time.Second, "config's references policies are no longer enforced", func() error {
			return users["alice"].Create(ctx, s3Snapshot(ns, "probe", "s3-creds", "http://127.0.0.1:1"), client.DryRunAll)
		})
		apply(ctx, t, wc, chartPolicies)
		referencesHold(ctx, t, wc, users, ns, release+"-etcdfleet-workload")
	})
}

// teamUsers are clients impersonating, in namespace ns: alice, who may
// write EtcdClusters and create EtcdSnapshots but get no Secret, claim or
// EtcdSnapshot; and bob, who may besides get the Secrets s3-creds and s3-ca, the
// claim backups and the EtcdSnapshot nightly, by name.
func teamUsers(ctx context.Context, t *testing.T, wc client.Client, admin *rest.Config, ns string) map[string]client.Client {
	t.Helper()
	role := func(name string, rules ...rbacv1.PolicyRule) {
		mustCreate(ctx, t, wc, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules})
	}
	role("etcd-editor",
		rbacv1.PolicyRule{APIGroups: []string{etcdv1.GroupName}, Resources: []string{"etcdclusters"}, Verbs: []string{"get", "create", "update", "patch"}},
		rbacv1.PolicyRule{APIGroups: []string{etcdv1.GroupName}, Resources: []string{"etcdsnapshots"}, Verbs: []string{"create"}})
	role("backup-reader",
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"s3-creds", "s3-ca"}, Verbs: []string{"get"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, ResourceNames: []string{"backups"}, Verbs: []string{"get"}},
		rbacv1.PolicyRule{APIGroups: []string{etcdv1.GroupName}, Resources: []string{"etcdsnapshots"}, ResourceNames: []string{"nightly"}, Verbs: []string{"get"}})
	bind := func(user, role string) {
		mustCreate(ctx, t, wc, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user + "-" + role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role}})
	}
	bind("alice", "etcd-editor")
	bind("bob", "etcd-editor")
	bind("bob", "backup-reader")
	out := map[string]client.Client{}
	for _, u := range []string{"alice", "bob"} {
		cfg := rest.CopyConfig(admin)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: u}
		out[u] = adminClient(t, cfg)
	}
	return out
}

// referencesHold runs the checks of TestReferencesNeedTheRequestersRights
// against the policies named policyPrefix-cluster-references and
// policyPrefix-snapshot-references.
func referencesHold(ctx context.Context, t *testing.T, wc client.Client, users map[string]client.Client, ns, policyPrefix string) {
	alice, bob := users["alice"], users["bob"]
	clusterPolicy, snapshotPolicy := policyPrefix+"-cluster-references", policyPrefix+"-snapshot-references"
	create := func(c client.Client, obj client.Object) error {
		return c.Create(ctx, obj.DeepCopyObject().(client.Object), client.DryRunAll)
	}
	// The policies reach the apiserver's admission informers asynchronously.
	eventually(ctx, t, 30*time.Second, "the references policies are enforced", func() error {
		if err := create(alice, s3Snapshot(ns, "probe", "s3-creds", "http://s3:8333")); err == nil {
			return errString("alice may still name a Secret she cannot get")
		}
		if err := create(wc, backupCluster(ns, "probe", "s3-creds", "http://127.0.0.1:1")); err == nil {
			return errString("a loopback endpoint is still admitted")
		}
		return nil
	})
	refusedSaying := func(what, policy string, err error, says ...string) {
		t.Helper()
		refused(t, what, policy, err)
		for _, s := range says {
			if err != nil && !strings.Contains(err.Error(), s) {
				t.Errorf("%s: the refusal does not say %q: %v", what, s, err)
			}
		}
	}
	admitted := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s is refused: %v", what, err)
		}
	}

	// Secrets, claims and snapshots: alice may not get them, bob may.
	needsGet := "alice must be allowed to get it in namespace " + ns
	refusedSaying("an EtcdSnapshot naming a Secret its creator cannot get", snapshotPolicy,
		create(alice, s3Snapshot(ns, "s", "s3-creds", "http://s3:8333")), "Secret s3-creds", needsGet)
	admitted("bob's EtcdSnapshot naming the Secret he may get", create(bob, s3Snapshot(ns, "s", "s3-creds", "http://s3:8333")))
	refusedSaying("bob's EtcdSnapshot naming another Secret", snapshotPolicy,
		create(bob, s3Snapshot(ns, "s", "cloud-credentials", "http://s3:8333")), "Secret cloud-credentials")
	// The CA bundle Secret is mounted into the agent as well: naming it
	// needs the same right, even beside credentials the creator may get.
	withCA := func(snap *etcdv1.EtcdSnapshot, ca string) *etcdv1.EtcdSnapshot {
		snap.Spec.Location.S3.Endpoint = "https://s3:8333"
		snap.Spec.Location.S3.CABundleSecretRef = &etcdv1.SecretKeyRef{Name: ca, Key: "ca.crt"}
		return snap
	}
	refusedSaying("bob's EtcdSnapshot naming a CA bundle Secret he cannot get", snapshotPolicy,
		create(bob, withCA(s3Snapshot(ns, "s", "s3-creds", ""), "cloud-credentials")), "CA bundle Secret cloud-credentials", "bob must be allowed")
	admitted("bob's EtcdSnapshot naming a CA bundle Secret he may get", create(bob, withCA(s3Snapshot(ns, "s", "s3-creds", ""), "s3-ca")))
	caCluster := backupCluster(ns, "ec-ca", "s3-creds", "https://s3:8333")
	caCluster.Spec.Backup.Location.S3.CABundleSecretRef = &etcdv1.SecretKeyRef{Name: "cloud-credentials", Key: "ca.crt"}
	refusedSaying("bob's EtcdCluster backing up with a CA bundle Secret he cannot get", clusterPolicy, create(bob, caCluster),
		"cloud-credentials", "bob must be allowed")
	caCluster.Spec.Backup.Location.S3.CABundleSecretRef.Name = "s3-ca"
	admitted("bob's EtcdCluster backing up with a CA bundle Secret he may get", create(bob, caCluster))
	caRestore := restoreCluster(ns, "from-ca", &etcdv1.SnapshotLocation{S3: &etcdv1.S3Location{Endpoint: "https://s3:8333", Bucket: "snaps",
		Key: "a.db", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3-creds"},
		CABundleSecretRef: &etcdv1.SecretKeyRef{Name: "cloud-credentials"}}})
	refusedSaying("bob's EtcdCluster restored with a CA bundle Secret he cannot get", clusterPolicy, create(bob, caRestore),
		"cloud-credentials", "bob must be allowed")

	pvcSnap := s3Snapshot(ns, "p", "", "")
	pvcSnap.Spec.Location = etcdv1.SnapshotLocation{PVC: &etcdv1.PVCLocation{ClaimName: "backups"}}
	refusedSaying("an EtcdSnapshot onto a claim its creator cannot get", snapshotPolicy, create(alice, pvcSnap), "claim backups", needsGet)
	admitted("bob's EtcdSnapshot onto the claim he may get", create(bob, pvcSnap))

	refusedSaying("an EtcdCluster backing up with a Secret its creator cannot get", clusterPolicy,
		create(alice, backupCluster(ns, "ec", "s3-creds", "http://s3:8333")), "Secret s3-creds", needsGet)
	admitted("bob's EtcdCluster backing up with the Secret he may get", create(bob, backupCluster(ns, "ec", "s3-creds", "http://s3:8333")))
	refusedSaying("bob's EtcdCluster naming TLS Secrets he cannot get", clusterPolicy, create(bob, tlsCluster(ns, "tls")),
		"Secret tls-server, tls-peer", "bob must be allowed")
	fromClaim := restoreCluster(ns, "from-claim", &etcdv1.SnapshotLocation{PVC: &etcdv1.PVCLocation{ClaimName: "backups", Path: "a.db"}})
	refusedSaying("an EtcdCluster restored from a claim its creator cannot get", clusterPolicy, create(alice, fromClaim), "claim backups", needsGet)
	admitted("bob's EtcdCluster restored from the claim he may get", create(bob, fromClaim))
	byName, _ := snapshotNameCluster(ns, "by-name")
	refusedSaying("an EtcdCluster restored from an EtcdSnapshot its creator cannot get", clusterPolicy, create(alice, byName),
		"EtcdSnapshot nightly", needsGet)
	admitted("bob's EtcdCluster restored from the EtcdSnapshot he may get", create(bob, byName))

	// Updates: only what they add is checked.
	existing := backupCluster(ns, "ec-"+policyPrefix[:2], "s3-creds", "http://s3:8333")
	mustCreate(ctx, t, wc, existing)
	defer func() { _ = wc.Delete(ctx, existing) }()
	cur := &etcdv1.EtcdCluster{}
	if err := alice.Get(ctx, client.ObjectKeyFromObject(existing), cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Replicas = ptrTo(int32(3))
	admitted("alice scaling an EtcdCluster whose Secret she cannot get", alice.Update(ctx, cur.DeepCopy(), client.DryRunAll))
	changed := cur.DeepCopy()
	changed.Spec.Backup.Location.S3.CredentialsSecretRef.Name = "cloud-credentials"
	refusedSaying("alice pointing an EtcdCluster's backups at a Secret she cannot get", clusterPolicy,
		alice.Update(ctx, changed, client.DryRunAll), "Secret cloud-credentials")

	// Endpoints, whoever asks (the admin here, who may get every Secret).
	for endpoint, ok := range map[string]bool{
		"http://127.0.0.1:8333": false, "http://[::1]:8333": false, "http://localhost:9000": false,
		"http://169.254.169.254": false, "http://[fe80::1]": true, "http://metadata.google.internal": false,
		"http://100.100.100.200": false, "http://[fd00:ec2::254]": false, "http://0.0.0.0:8333": false,
		"http://2130706433:80": false, "http://0x7f000001": false, "http://127.1:8333": false, "http://[::ffff:127.0.0.1]": false,
		"http://s3.localhost": false, "http://127.0.0.2:8333": true, "http://10.0.0.5:8333": true,
		"https://s3.eu-west-1.amazonaws.com": true, "http://seaweedfs.storage.svc:8333": true, "http://S3.Example.COM": true,
	} {
		err := create(wc, s3Snapshot(ns, "e", "s3-creds", endpoint))
		cerr := create(wc, backupCluster(ns, "e", "s3-creds", endpoint))
		if ok {
			admitted("an EtcdSnapshot to "+endpoint, err)
			admitted("an EtcdCluster backing up to "+endpoint, cerr)
			continue
		}
		refusedSaying("an EtcdSnapshot to "+endpoint, snapshotPolicy, err, "is refused: a loopback, link-local", "allowedS3Endpoints")
		refusedSaying("an EtcdCluster backing up to "+endpoint, clusterPolicy, cerr, "is refused")
	}
	legacy := &etcdv1.EtcdCluster{}
	if err := wc.Get(ctx, client.ObjectKey{Namespace: ns, Name: "legacy"}, legacy); err != nil {
		t.Fatal(err)
	}
	legacy.Spec.Replicas = ptrTo(int32(3))
	admitted("scaling an EtcdCluster made before the policy, with a loopback endpoint", wc.Update(ctx, legacy.DeepCopy(), client.DryRunAll))
	legacy.Spec.Backup.Location.S3.Endpoint = "http://127.0.0.1:9001"
	refusedSaying("moving that cluster's backups to another loopback endpoint", clusterPolicy, wc.Update(ctx, legacy, client.DryRunAll),
		`"127.0.0.1"`)
	moved := cur.DeepCopy()
	moved.Spec.Backup.Location.S3.Endpoint = "http://169.254.169.254"
	refusedSaying("an EtcdCluster's backups moved to the metadata address", clusterPolicy, wc.Update(ctx, moved, client.DryRunAll),
		`"169.254.169.254"`)
}

// s3Snapshot is an EtcdSnapshot of cluster "ec" to endpoint with the
// Secret creds.
func s3Snapshot(ns, name, creds, endpoint string) *etcdv1.EtcdSnapshot {
	return &etcdv1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: etcdv1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: "ec"},
			Location: etcdv1.SnapshotLocation{S3: &etcdv1.S3Location{Endpoint: endpoint, Bucket: "snaps", Key: "x/",
				CredentialsSecretRef: corev1.LocalObjectReference{Name: creds}}}}}
}

// backupCluster is an EtcdCluster backing up to endpoint with the Secret creds.
func backupCluster(ns, name, creds, endpoint string) *etcdv1.EtcdCluster {
	ec := e2eutil.NewEtcdCluster(ns, name, 1, false)
	ec.Spec.Backup = &etcdv1.BackupSpec{Interval: &metav1.Duration{Duration: time.Hour},
		Location: *s3Snapshot(ns, name, creds, endpoint).Spec.Location.DeepCopy()}
	return ec
}

// referencePolicies are the references policies and their bindings among objs.
func referencePolicies(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") && strings.HasSuffix(o.GetName(), "-references") {
			out = append(out, o)
		}
	}
	return out
}

func decodeManifests(t *testing.T, manifests [][]byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, m := range manifests {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(m, &u.Object); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

type errString string

func (e errString) Error() string { return string(e) }
