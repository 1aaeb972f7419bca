package pod

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

func restoringSeed(loc v1alpha1.SnapshotLocation) func(*v1alpha1.EtcdMember) {
	return func(m *v1alpha1.EtcdMember) {
		m.Spec.Bootstrap = true
		m.Spec.Restore = &v1alpha1.MemberRestore{Location: loc, SHA256: "abc", ETag: "9b2c-1"}
	}
}

var s3Loc = v1alpha1.SnapshotLocation{S3: &v1alpha1.S3Location{Endpoint: "http://s3:8333/", Bucket: "b", Key: "k/s.db",
	Region: "r", CredentialsSecretRef: corev1.LocalObjectReference{Name: "creds"}}}

// TestRestoreInitContainerOnTheSeedAtBootstrapOnly: the restore runs in the
// seed's first Pod only, never once the cluster has formed or the seed has
// an ID (a later Pod would restore the old snapshot under the seed's ID).
func TestRestoreInitContainerOnTheSeedAtBootstrapOnly(t *testing.T) {
	has := func(p *corev1.Pod) bool {
		return slices.ContainsFunc(p.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == RestoreContainerName })
	}
	if !has(Build(newMember(restoringSeed(s3Loc)), BuildOptions{})) {
		t.Error("a restoring seed's first Pod has no restore init container")
	}
	if has(Build(newMember(restoringSeed(s3Loc)), BuildOptions{ClusterFormed: true})) {
		t.Error("the seed restores again after the cluster formed")
	}
	if has(Build(newMember(restoringSeed(s3Loc), func(m *v1alpha1.EtcdMember) { m.Status.MemberID = "1" }), BuildOptions{})) {
		t.Error("the seed restores again once it has a member ID")
	}
	if has(Build(newMember(), BuildOptions{})) {
		t.Error("a member without restore gets a restore init container")
	}
}

// TestRestoreInitContainerFromS3 runs the agent with the seed's own flags
// and the credentials Secret mounted read-only; no token, no env secrets.
func TestRestoreInitContainerFromS3(t *testing.T) {
	p := Build(newMember(restoringSeed(s3Loc)), BuildOptions{})
	if len(p.Spec.InitContainers) != 1 {
		t.Fatalf("want the restore init container alone, got %+v", p.Spec.InitContainers)
	}
	c := p.Spec.InitContainers[0]
	args := strings.Join(c.Command, " ")
	for _, want := range []string{"restore-agent", "--data-dir=" + DataDir, "--name=m1", "--initial-cluster=m0=http://m0.c1.ns1.svc:2380,m1=http://m1.c1.ns1.svc:2380",
		"--initial-cluster-token=ns1-c1-uid", "--sha256=abc", "--etag=9b2c-1", "--s3-endpoint=http://s3:8333 ", "--s3-key=k/s.db", "--s3-credentials-dir=" + restoreCredsDir} {
		if !strings.Contains(args+" ", want) {
			t.Errorf("restore command %q lacks %q", args, want)
		}
	}
	if len(c.Env) != 0 {
		t.Errorf("restore container has env %v; credentials are files", c.Env)
	}
	var secret *corev1.SecretVolumeSource
	for _, v := range p.Spec.Volumes {
		if v.Name == restoreCredsVolume {
			secret = v.Secret
		}
	}
	if secret == nil || secret.SecretName != "creds" {
		t.Fatalf("no credentials Secret volume: %+v", p.Spec.Volumes)
	}
	if *p.Spec.AutomountServiceAccountToken {
		t.Error("the restoring Pod mounts a ServiceAccount token")
	}
}

// TestRestoreInitContainerFromAClaim mounts the claim read-only (the
// admission policy admits only read-only foreign claims) after the guard.
func TestRestoreInitContainerFromAClaim(t *testing.T) {
	pvc := v1alpha1.SnapshotLocation{PVC: &v1alpha1.PVCLocation{ClaimName: "backups", Path: "d/s.db"}}
	p := Build(newMember(restoringSeed(pvc), func(m *v1alpha1.EtcdMember) { m.Spec.Storage.Medium = v1alpha1.StorageMediumMemory }), BuildOptions{})
	if n := len(p.Spec.InitContainers); n != 2 || p.Spec.InitContainers[1].Name != RestoreContainerName {
		t.Fatalf("want the guard then the restore, got %+v", p.Spec.InitContainers)
	}
	if c := p.Spec.InitContainers[1]; !slices.Contains(c.Command, "--file="+restoreFileDir+"/d/s.db") {
		t.Errorf("restore command %v does not read the claim's file", c.Command)
	}
	for _, v := range p.Spec.Volumes {
		if v.Name == restoreFileVolume && (v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "backups" || !v.PersistentVolumeClaim.ReadOnly) {
			t.Errorf("restore claim volume %+v is not backups, read-only", v)
		}
	}
}

// TestRestoreInitContainerWithACABundle mounts only the bundle's key of the
// CA Secret, read-only, and points --s3-ca-file at it; no SSE flag (reads
// need none).
func TestRestoreInitContainerWithACABundle(t *testing.T) {
	loc := *s3Loc.DeepCopy()
	loc.S3.Endpoint = "https://s3:8333"
	loc.S3.CABundleSecretRef = &v1alpha1.SecretKeyRef{Name: "storage-ca", Key: "bundle.pem"}
	loc.S3.ServerSideEncryption = &v1alpha1.ServerSideEncryption{Type: v1alpha1.SSEKMS, KMSKeyID: "alias/k"}
	p := Build(newMember(restoringSeed(loc)), BuildOptions{})
	c := p.Spec.InitContainers[0]
	args := strings.Join(c.Command, " ") + " "
	if want := "--s3-ca-file=" + restoreCADir + "/bundle.pem "; !strings.Contains(args, want) {
		t.Errorf("restore command %q lacks %q", args, want)
	}
	if strings.Contains(args, "--s3-sse") {
		t.Errorf("restore command %q asks for encryption on a read", args)
	}
	var ca *corev1.SecretVolumeSource
	for _, v := range p.Spec.Volumes {
		if v.Name == restoreCAVolume {
			ca = v.Secret
		}
	}
	if ca == nil || ca.SecretName != "storage-ca" || len(ca.Items) != 1 || ca.Items[0].Key != "bundle.pem" {
		t.Fatalf("CA volume %+v: want the one key bundle.pem of Secret storage-ca", ca)
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == restoreCAVolume && m.MountPath == restoreCADir && m.ReadOnly
	}) {
		t.Errorf("CA bundle not mounted read-only at %s: %+v", restoreCADir, c.VolumeMounts)
	}
}

// TestRestoreInitContainerOfATLSCluster: the seed of a TLS cluster
// restores with the https peer URL its etcd then advertises (etcdutl
// writes the peer URLs into the restored data, and etcd refuses to start
// when they differ from its flags), from the https initial cluster, and
// without the cluster's TLS Secrets, which the restore does not use; its
// etcd container serves with TLS as any member's.
func TestRestoreInitContainerOfATLSCluster(t *testing.T) {
	const initial = "m0=https://m0.c1.ns1.svc:2380,m1=https://m1.c1.ns1.svc:2380"
	p := Build(newMember(restoringSeed(s3Loc), func(m *v1alpha1.EtcdMember) {
		m.Spec.InitialCluster = initial
		m.Spec.TLS = &v1alpha1.MemberTLS{ClientServerSecretRef: "srv", ClientMTLS: true, OperatorClientSecretRef: "op", PeerSecretRef: "peer"}
	}), BuildOptions{})
	if len(p.Spec.InitContainers) != 1 {
		t.Fatalf("want the restore init container alone, got %+v", p.Spec.InitContainers)
	}
	restore := p.Spec.InitContainers[0]
	got := flags(t, p)
	for _, want := range []string{"--initial-advertise-peer-urls=" + got["--initial-advertise-peer-urls"], "--initial-cluster=" + initial} {
		if !slices.Contains(restore.Command, want) {
			t.Errorf("restore command %q lacks %q", restore.Command, want)
		}
	}
	if got["--initial-advertise-peer-urls"] != "https://m1.c1.ns1.svc:2380" || got["--initial-cluster"] != initial {
		t.Errorf("etcd peer flags %q %q", got["--initial-advertise-peer-urls"], got["--initial-cluster"])
	}
	etcdCmd := etcdContainer(t, p).Command
	for _, f := range []string{"--client-cert-auth=true", "--peer-client-cert-auth=true"} {
		if !slices.Contains(etcdCmd, f) {
			t.Errorf("the restoring seed's etcd lacks %s", f)
		}
	}
	for _, vm := range restore.VolumeMounts {
		if strings.HasPrefix(vm.MountPath, "/etc/etcd/tls") {
			t.Errorf("restore container mounts the TLS Secret volume %s", vm.Name)
		}
	}
}
