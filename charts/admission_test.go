package charts_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/config"
	"github.com/etcdfleet/etcdfleet/fleet/settings"
	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/component/pod"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

// memberPod is the Pod memberctl builds for member name of EtcdCluster ec,
// with the controller reference Sync adds.
func memberPod(ec *etcdv1.EtcdCluster, name string) *corev1.Pod {
	m := member(ec, name)
	p := pod.Build(m, pod.BuildOptions{AgentImage: settings.Default().AgentImage})
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: etcdv1.GroupVersion.String(), Kind: "EtcdMember",
		Name: m.Name, UID: m.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	return p
}

// member is the EtcdMember name that the EtcdCluster reconciler makes for ec.
func member(ec *etcdv1.EtcdCluster, name string) *etcdv1.EtcdMember {
	m := &etcdv1.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{Namespace: ec.Namespace, Name: name, UID: types.UID("uid-" + name)},
		Spec: etcdv1.EtcdMemberSpec{ClusterName: ec.Name, Version: ec.Spec.Version, Storage: ec.Spec.Storage,
			Bootstrap: true, InitialCluster: name + "=http://" + name + ":2380", ClusterToken: "t"},
	}
	if tls := ec.Spec.TLS; tls != nil {
		m.Spec.TLS = &etcdv1.MemberTLS{ClientServerSecretRef: tls.Client.ServerSecretRef.Name, PeerSecretRef: tls.Peer.SecretRef.Name}
	}
	if b := ec.Spec.Bootstrap; b != nil && b.Restore != nil && b.Restore.Source.Location != nil {
		m.Spec.Restore = &etcdv1.MemberRestore{Location: *b.Restore.Source.Location}
	}
	if b := ec.Spec.Bootstrap; b != nil && b.Restore != nil && ec.Status.RestoreSource != nil { // by snapshot name
		m.Spec.Restore = &etcdv1.MemberRestore{Location: *ec.Status.RestoreSource, SnapshotName: b.Restore.Source.SnapshotName}
	}
	if r := ec.Status.Recovery; r != nil { // a restore after total loss, as recorded in status
		m.Spec.Restore = r.Source.DeepCopy()
	} else if ec.Spec.Recovery != nil && ec.Spec.Backup != nil { // a restore after total loss, of a scheduled snapshot
		loc := *ec.Spec.Backup.Location.DeepCopy()
		loc.S3.Key += "scheduled.db"
		m.Spec.Restore = &etcdv1.MemberRestore{Location: loc, SnapshotName: "scheduled"}
	}
	return m
}

func tlsCluster(ns, name string) *etcdv1.EtcdCluster {
	ec := e2eutil.NewEtcdCluster(ns, name, 3, false)
	ec.Spec.TLS = &etcdv1.TLSSpec{
		Client: &etcdv1.ClientTLSSpec{ServerSecretRef: corev1.LocalObjectReference{Name: name + "-server"}},
		Peer:   &etcdv1.PeerTLSSpec{SecretRef: corev1.LocalObjectReference{Name: name + "-peer"}},
	}
	return ec
}

// recoveringCluster opts in to a restore after total loss and backs up to
// S3 with the Secret creds.
func recoveringCluster(ns, name, creds string) *etcdv1.EtcdCluster {
	ec := e2eutil.NewEtcdCluster(ns, name, 1, true)
	ec.Spec.Recovery = &etcdv1.RecoverySpec{RestoreOnTotalLoss: true}
	ec.Spec.Backup = &etcdv1.BackupSpec{Interval: &metav1.Duration{Duration: time.Hour},
		Location: etcdv1.SnapshotLocation{S3: &etcdv1.S3Location{Endpoint: "http://s3:8333", Bucket: "snaps", Key: "auto/",
			CredentialsSecretRef: corev1.LocalObjectReference{Name: creds}}}}
	return ec
}

// restoreCluster is an EtcdCluster restored at bootstrap from loc.
func restoreCluster(ns, name string, loc *etcdv1.SnapshotLocation) *etcdv1.EtcdCluster {
	ec := e2eutil.NewEtcdCluster(ns, name, 1, false)
	ec.Spec.Bootstrap = &etcdv1.BootstrapSpec{Restore: &etcdv1.RestoreSpec{Source: etcdv1.RestoreSource{Location: loc}}}
	return ec
}

// snapshotNameCluster is an EtcdCluster restored at bootstrap from the
// EtcdSnapshot "nightly" by name, and that snapshot's location (with the
// full key), which the reconciler records in status.restoreSource.
func snapshotNameCluster(ns, name string) (*etcdv1.EtcdCluster, *etcdv1.SnapshotLocation) {
	ec := e2eutil.NewEtcdCluster(ns, name, 1, false)
	ec.Spec.Bootstrap = &etcdv1.BootstrapSpec{Restore: &etcdv1.RestoreSpec{Source: etcdv1.RestoreSource{SnapshotName: "nightly"}}}
	return ec, &etcdv1.SnapshotLocation{S3: &etcdv1.S3Location{Endpoint: "http://s3:8333", Bucket: "snaps", Key: "x/nightly.db",
		CredentialsSecretRef: corev1.LocalObjectReference{Name: "snapshot-creds"}}}
}

// escalations are Pods etcdfleet never builds, each one step from its own.
func escalations(good *corev1.Pod) map[string]*corev1.Pod {
	with := func(mutate func(p *corev1.Pod)) *corev1.Pod {
		p := good.DeepCopy()
		mutate(p)
		return p
	}
	return map[string]*corev1.Pod{
		"another namespace's ServiceAccount": with(func(p *corev1.Pod) {
			p.Namespace, p.Spec.ServiceAccountName = "kube-system", "powerful"
		}),
		"another ServiceAccount": with(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "powerful" }),
		"a hostPath": with(func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		}),
		"a privileged container": with(func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext.Privileged = ptr.To(true)
			p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil // invalid with privileged
		}),
		"a host network":  with(func(p *corev1.Pod) { p.Spec.HostNetwork = true }),
		"an old etcd tag": with(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "quay.io/coreos/etcd:v3.3.0" }),
		"a foreign image": with(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "docker.io/library/busybox:1" }),
		"a look-alike image": with(func(p *corev1.Pod) {
			p.Spec.Containers[0].Image = strings.Replace(p.Spec.Containers[0].Image, "etcd:", "etcd-evil:", 1)
		}),
		"a Secret mount no EtcdCluster names": with(func(p *corev1.Pod) { p.Spec.Volumes[1].Secret.SecretName = "cloud-credentials" }),
		"another cluster's TLS Secret":        with(func(p *corev1.Pod) { p.Spec.Volumes[1].Secret.SecretName = "adm-other-server" }),
		"another workload's claim":            with(func(p *corev1.Pod) { p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName = "postgres-data" }),
		"a read-only claim no EtcdCluster names": with(func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "other", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "postgres-data", ReadOnly: true}}})
		}),
		"a token automount":        with(func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = nil }),
		"no EtcdMember controller": with(func(p *corev1.Pod) { p.OwnerReferences = nil }),
		"no cluster label, to dodge the Secrets policy": with(func(p *corev1.Pod) {
			delete(p.Labels, etcdv1.LabelCluster)
			p.Spec.Volumes[1].Secret.SecretName = "cloud-credentials"
		}),
	}
}

// caEscalations are seeds restoring from S3 with a CA bundle whose CA
// volume mounts more than the bundle's key.
func caEscalations(t *testing.T, seed *corev1.Pod) map[string]*corev1.Pod {
	t.Helper()
	ca := -1
	for i, v := range seed.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == "s3-ca" {
			ca = i
		}
	}
	if ca < 0 {
		t.Fatalf("the seed mounts no CA bundle Secret s3-ca: %+v", seed.Spec.Volumes)
	}
	with := func(mutate func(s *corev1.SecretVolumeSource)) *corev1.Pod {
		p := seed.DeepCopy()
		mutate(p.Spec.Volumes[ca].Secret)
		return p
	}
	return map[string]*corev1.Pod{
		"the CA bundle Secret mounted whole": with(func(s *corev1.SecretVolumeSource) { s.Items = nil }),
		"another key of the CA bundle Secret": with(func(s *corev1.SecretVolumeSource) {
			s.Items = []corev1.KeyToPath{{Key: "tls.key", Path: "bundle.pem"}}
		}),
		"a second key of the CA bundle Secret": with(func(s *corev1.SecretVolumeSource) {
			s.Items = append(s.Items, corev1.KeyToPath{Key: "tls.key", Path: "tls.key"})
		}),
		"the CA bundle's key of another Secret": with(func(s *corev1.SecretVolumeSource) { s.SecretName = "cloud-credentials" }),
	}
}

// refused fails unless err is an admission refusal by policy.
func refused(t *testing.T, what, policy string, err error) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy") || !strings.Contains(err.Error(), policy) {
		t.Errorf("%s: want a refusal by ValidatingAdmissionPolicy %s, got %v", what, policy, err)
	}
}

func dryRunCreate(ctx context.Context, cs kubernetes.Interface, p *corev1.Pod) error {
	_, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

// admissionPolicyHolds proves, as the ServiceAccount policyPrefix's policy
// guards (namespace saNS), that each escalation is refused and that the Pods
// memberctl builds are admitted, while other users are not constrained.
func admissionPolicyHolds(ctx context.Context, t *testing.T, w1 *sandbox.Cluster, wc client.Client, saNS, policyPrefix string) {
	// A namespace of its own: the manager that runs later must not see
	// these EtcdClusters, which are deleted at the end (no finalizer yet).
	ns := "admission-" + saNS
	createNamespace(ctx, t, wc, ns, nil)
	adm, other := tlsCluster(ns, "adm"), tlsCluster(ns, "adm-other")
	mem := e2eutil.NewEtcdCluster(ns, "adm-mem", 1, true)
	fromS3, fromPVC := restoreCluster(ns, "adm-s3", &etcdv1.SnapshotLocation{S3: &etcdv1.S3Location{
		Endpoint: "https://s3:8333", Bucket: "snaps", Key: "a.db", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3-creds"},
		CABundleSecretRef: &etcdv1.SecretKeyRef{Name: "s3-ca", Key: "bundle.pem"}}}),
		restoreCluster(ns, "adm-pvc", &etcdv1.SnapshotLocation{PVC: &etcdv1.PVCLocation{ClaimName: "backups", Path: "a.db"}})
	recovering := recoveringCluster(ns, "adm-rec", "backup-creds")
	byName, byNameLoc := snapshotNameCluster(ns, "adm-snap")
	for _, ec := range []*etcdv1.EtcdCluster{adm, other, mem, fromS3, fromPVC, recovering, byName} {
		mustCreate(ctx, t, wc, ec)
		defer func() {
			if err := wc.Delete(ctx, ec); err != nil {
				t.Errorf("delete EtcdCluster %s: %v", ec.Name, err)
			}
		}()
	}
	// The ServiceAccounts the escalations run as exist: else the
	// ServiceAccount admission plugin, not the policy, would refuse them.
	for _, where := range []string{ns, "kube-system"} {
		mustCreate(ctx, t, wc, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: where, Name: "powerful"}})
	}
	sa := saClientset(ctx, t, w1, saNS, saName)
	good := memberPod(adm, "adm-0")
	// A seed restoring from an EtcdSnapshot by name: the EtcdCluster
	// reconciler records the snapshot's location first; until then the
	// seed's mount of its Secret is refused like any other.
	withSource := byName.DeepCopy()
	withSource.Status.RestoreSource = byNameLoc
	bySnapshot := memberPod(withSource, "adm-snap-0")
	refused(t, "a seed restoring from an EtcdSnapshot not yet recorded in its cluster's status", policyPrefix+"-pod-secrets",
		dryRunCreate(ctx, sa, bySnapshot))
	byName.Status.RestoreSource = byNameLoc.DeepCopy()
	if err := wc.Status().Update(ctx, byName); err != nil {
		t.Fatalf("record status.restoreSource: %v", err)
	}
	// A restore after total loss from a hand-made EtcdSnapshot, whose
	// Secret spec.backup does not name: the reconciler records the source
	// in status.recovery before it creates the seed.
	handMade := &etcdv1.SnapshotLocation{S3: &etcdv1.S3Location{Endpoint: "http://s3:8333", Bucket: "snaps", Key: "last-good.db",
		CredentialsSecretRef: corev1.LocalObjectReference{Name: "hand-made-creds"}}}
	recovering.Status.Recovery = &etcdv1.RecoveryStatus{Phase: etcdv1.RecoveryRestoring, StartedAt: metav1.Now(),
		Source: etcdv1.MemberRestore{Location: *handMade, SnapshotName: "last-good"}, URI: "s3://snaps/last-good.db"}
	if err := wc.Status().Update(ctx, recovering); err != nil {
		t.Fatalf("record status.recovery: %v", err)
	}
	// The policies and their params reach the apiserver's admission
	// informers asynchronously, each policy on its own: wait until each
	// refuses one escalation (a foreign image; a Secret no EtcdCluster
	// names). CI once saw the Secrets policy still admit after the other
	// already refused.
	eventually(ctx, t, 30*time.Second, "the admission policies are enforced", func() error {
		p := good.DeepCopy()
		p.Spec.Containers[0].Image = "docker.io/library/busybox:1"
		if err := dryRunCreate(ctx, sa, p); err == nil {
			return fmt.Errorf("a foreign image is still admitted")
		}
		p = good.DeepCopy()
		p.Spec.Volumes[1].Secret.SecretName = "cloud-credentials"
		if err := dryRunCreate(ctx, sa, p); err == nil {
			return fmt.Errorf("a Secret no EtcdCluster names is still admitted")
		}
		return nil
	})
	// etcd's official images at every supported version; an old tag, which
	// ships /bin/sh, is among the escalations below.
	for _, image := range config.EtcdImages() {
		p := good.DeepCopy()
		p.Spec.Containers[0].Image = image
		if err := dryRunCreate(ctx, sa, p); err != nil {
			t.Errorf("a member's Pod running %s, a supported version, is refused: %v", image, err)
		}
	}
	for what, p := range map[string]*corev1.Pod{"a TLS member's Pod": good, "a memory member's Pod": memberPod(mem, "adm-mem-0"),
		"a seed restoring from S3": memberPod(fromS3, "adm-s3-0"), "a seed restoring from a claim": memberPod(fromPVC, "adm-pvc-0"),
		"a seed restoring its backup after total loss":  memberPod(recovering, "adm-rec-0"),
		"a seed restoring from an EtcdSnapshot by name": bySnapshot} {
		if err := dryRunCreate(ctx, sa, p); err != nil {
			t.Errorf("%s, as memberctl builds it, is refused: %v", what, err)
		}
	}
	// The restore's CA bundle Secret is admitted as a volume of its one
	// key only: naming a Secret as a CA bundle must not mount its other
	// keys, nor the whole Secret.
	for what, p := range caEscalations(t, memberPod(fromS3, "adm-s3-0")) {
		refused(t, what, policyPrefix+"-pod-secrets", dryRunCreate(ctx, sa, p))
	}
	for what, p := range escalations(good) {
		policy := policyPrefix + "-pods"
		switch what {
		case "a Secret mount no EtcdCluster names", "another cluster's TLS Secret", "a read-only claim no EtcdCluster names":
			policy = policyPrefix + "-pod-secrets"
		case "another workload's claim":
			// Refused by both of this install's policies (a writable claim
			// that is not the member's, and a claim its EtcdCluster does not
			// name); the apiserver reports whichever it evaluates first.
			policy = policyPrefix + "-pod"
		case "another namespace's ServiceAccount":
			// Refused by both policies, and by the other install's Secrets
			// policy too: that matches every labelled Pod before it looks
			// at the requester, and kube-system has no EtcdCluster.
			policy = "etcdfleet-workload-pod"
		}
		refused(t, what, policy, dryRunCreate(ctx, sa, p))
	}

	// Images may change in place: updates are held to the same shape.
	// The Pod's owner exists: with the made-up UID of memberPod the
	// sandbox's garbage collector removed the Pod before the patch and
	// delete below (CI-J, at load 25).
	owner := member(adm, good.Name)
	owner.UID = ""
	mustCreate(ctx, t, wc, owner)
	defer func() {
		if err := wc.Delete(ctx, owner); err != nil {
			t.Errorf("delete EtcdMember %s: %v", owner.Name, err)
		}
	}()
	good.OwnerReferences[0].UID = owner.UID
	if _, err := sa.CoreV1().Pods(ns).Create(ctx, good, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create etcdfleet's own Pod: %v", err)
	}
	patch := []byte(`[{"op":"replace","path":"/spec/containers/0/image","value":"docker.io/library/busybox:1"}]`)
	refused(t, "an image changed in place", policyPrefix+"-pods",
		ignore(sa.CoreV1().Pods(ns).Patch(ctx, good.Name, types.JSONPatchType, patch, metav1.PatchOptions{})))
	if err := sa.CoreV1().Pods(ns).Delete(ctx, good.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Errorf("delete: %v", err)
	}
	// Anyone else is left alone, even in a namespace without EtcdClusters:
	// the policies match etcdfleet's identity only.
	foreign := escalations(good)["a foreign image"]
	unlabelled := escalations(good)["another namespace's ServiceAccount"]
	delete(unlabelled.Labels, etcdv1.LabelCluster)
	unlabelled.Spec.ServiceAccountName = ""
	for _, p := range []*corev1.Pod{foreign, unlabelled} {
		if err := wc.Create(ctx, p, client.DryRunAll); err != nil {
			t.Errorf("an administrator's Pod in %s is refused: %v", p.Namespace, err)
		}
	}
}
