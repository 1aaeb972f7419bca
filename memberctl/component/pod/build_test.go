package pod

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// Pure tests of Build. Sync runs against a real apiserver in sync_test.go.

func newMember(mutate ...func(*v1alpha1.EtcdMember)) *v1alpha1.EtcdMember {
	m := &v1alpha1.EtcdMember{}
	m.Name, m.Namespace = "m1", "ns1"
	m.Spec = v1alpha1.EtcdMemberSpec{
		ClusterName:    "c1",
		Version:        "3.6.16",
		Storage:        v1alpha1.StorageSpec{Size: resource.MustParse("2Gi")},
		InitialCluster: "m0=http://m0.c1.ns1.svc:2380,m1=http://m1.c1.ns1.svc:2380",
		ClusterToken:   "ns1-c1-uid",
	}
	for _, f := range mutate {
		f(m)
	}
	return m
}

func etcdContainer(t *testing.T, p *corev1.Pod) corev1.Container {
	t.Helper()
	if len(p.Spec.Containers) != 1 || p.Spec.Containers[0].Name != ContainerName {
		t.Fatalf("want exactly the %q container, got %+v", ContainerName, p.Spec.Containers)
	}
	return p.Spec.Containers[0]
}

// flags returns the container's --key=value flags as a map.
func flags(t *testing.T, p *corev1.Pod) map[string]string {
	t.Helper()
	cmd := etcdContainer(t, p).Command
	if len(cmd) == 0 || cmd[0] != "etcd" {
		t.Fatalf("command must start with etcd: %q", cmd)
	}
	out := map[string]string{}
	for _, a := range cmd[1:] {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			t.Fatalf("flag without value: %q", a)
		}
		if _, dup := out[k]; dup {
			t.Fatalf("duplicate flag %s", k)
		}
		out[k] = v
	}
	return out
}

func TestInitialClusterState(t *testing.T) {
	for _, tc := range []struct {
		bootstrap bool
		memberID  string
		formed    bool
		want      string
	}{
		{true, "", false, "new"},
		{true, "", true, "existing"},      // seed lost its data after the cluster formed: fail loudly
		{true, "8e9e", false, "existing"}, // seed was seen running: never re-bootstrap
		{true, "8e9e", true, "existing"},
		{false, "", false, "existing"}, // joiners always join
		{false, "", true, "existing"},
		{false, "8e9e", false, "existing"},
		{false, "8e9e", true, "existing"},
	} {
		m := newMember(func(m *v1alpha1.EtcdMember) {
			m.Spec.Bootstrap = tc.bootstrap
			m.Status.MemberID = tc.memberID
		})
		got := flags(t, Build(m, BuildOptions{ClusterFormed: tc.formed}))["--initial-cluster-state"]
		if got != tc.want {
			t.Errorf("bootstrap=%v memberID=%q formed=%v: state %q, want %q",
				tc.bootstrap, tc.memberID, tc.formed, got, tc.want)
		}
	}
}

func TestBaseFlagsAndImage(t *testing.T) {
	m := newMember()
	p := Build(m, BuildOptions{})
	want := map[string]string{
		"--name":                        "m1",
		"--data-dir":                    "/var/lib/etcd",
		"--listen-peer-urls":            "http://0.0.0.0:2380",
		"--listen-client-urls":          "http://0.0.0.0:2379",
		"--advertise-client-urls":       "http://m1.c1.ns1.svc:2379",
		"--initial-advertise-peer-urls": "http://m1.c1.ns1.svc:2380",
		"--initial-cluster":             m.Spec.InitialCluster,
		"--initial-cluster-token":       "ns1-c1-uid",
		"--initial-cluster-state":       "existing",
		"--listen-metrics-urls":         "http://0.0.0.0:2381",
	}
	got := flags(t, p)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s=%q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("unexpected extra flags: %v", got)
	}
	if img := etcdContainer(t, p).Image; img != "quay.io/coreos/etcd:v3.6.16" {
		t.Errorf("image %q", img)
	}
	p = Build(m, BuildOptions{ImageRepository: "registry.example/etcd"})
	if img := etcdContainer(t, p).Image; img != "registry.example/etcd:v3.6.16" {
		t.Errorf("image with repository option: %q", img)
	}
}

func TestTLS(t *testing.T) {
	clientFlags := []string{"--cert-file=/etc/etcd/tls/client/tls.crt", "--key-file=/etc/etcd/tls/client/tls.key"}
	mtlsFlags := []string{"--client-cert-auth=true", "--trusted-ca-file=/etc/etcd/tls/client/ca.crt"}
	peerFlags := []string{
		"--peer-cert-file=/etc/etcd/tls/peer/tls.crt", "--peer-key-file=/etc/etcd/tls/peer/tls.key",
		"--peer-trusted-ca-file=/etc/etcd/tls/peer/ca.crt", "--peer-client-cert-auth=true",
	}
	for _, tc := range []struct {
		name               string
		tls                *v1alpha1.MemberTLS
		present, absent    []string
		clientURL, peerURL string
		secrets            map[string]string // volume -> Secret
	}{
		{"none", nil, nil, slices.Concat(clientFlags, mtlsFlags, peerFlags),
			"http://m1.c1.ns1.svc:2379", "http://m1.c1.ns1.svc:2380", nil},
		{"client", &v1alpha1.MemberTLS{ClientServerSecretRef: "srv", OperatorClientSecretRef: "op"},
			clientFlags, slices.Concat(mtlsFlags, peerFlags),
			"https://m1.c1.ns1.svc:2379", "http://m1.c1.ns1.svc:2380", map[string]string{"tls-client": "srv"}},
		{"client mTLS", &v1alpha1.MemberTLS{ClientServerSecretRef: "srv", ClientMTLS: true, OperatorClientSecretRef: "op"},
			slices.Concat(clientFlags, mtlsFlags), peerFlags,
			"https://m1.c1.ns1.svc:2379", "http://m1.c1.ns1.svc:2380", map[string]string{"tls-client": "srv"}},
		{"peer", &v1alpha1.MemberTLS{PeerSecretRef: "peer"}, peerFlags, slices.Concat(clientFlags, mtlsFlags),
			"http://m1.c1.ns1.svc:2379", "https://m1.c1.ns1.svc:2380", map[string]string{"tls-peer": "peer"}},
		{"both", &v1alpha1.MemberTLS{ClientServerSecretRef: "srv", ClientMTLS: true, PeerSecretRef: "peer"},
			slices.Concat(clientFlags, mtlsFlags, peerFlags), nil,
			"https://m1.c1.ns1.svc:2379", "https://m1.c1.ns1.svc:2380",
			map[string]string{"tls-client": "srv", "tls-peer": "peer"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Build(newMember(func(m *v1alpha1.EtcdMember) { m.Spec.TLS = tc.tls }), BuildOptions{})
			cmd := etcdContainer(t, p).Command
			for _, f := range tc.present {
				if !slices.Contains(cmd, f) {
					t.Errorf("missing %s", f)
				}
			}
			for _, f := range tc.absent {
				if slices.Contains(cmd, f) {
					t.Errorf("unexpected %s", f)
				}
			}
			got := flags(t, p)
			if got["--advertise-client-urls"] != tc.clientURL || got["--initial-advertise-peer-urls"] != tc.peerURL {
				t.Errorf("urls %q %q", got["--advertise-client-urls"], got["--initial-advertise-peer-urls"])
			}
			if !strings.HasPrefix(got["--listen-client-urls"], strings.Split(tc.clientURL, ":")[0]+"://") ||
				!strings.HasPrefix(got["--listen-peer-urls"], strings.Split(tc.peerURL, ":")[0]+"://") {
				t.Errorf("listen schemes %q %q", got["--listen-client-urls"], got["--listen-peer-urls"])
			}
			if got["--listen-metrics-urls"] != "http://0.0.0.0:2381" {
				t.Errorf("metrics must stay plain http for the readiness probe: %q", got["--listen-metrics-urls"])
			}
			checkSecretVolumes(t, p, tc.secrets)
		})
	}
}

// checkSecretVolumes asserts the Pod mounts exactly the given Secret volumes, read-only.
func checkSecretVolumes(t *testing.T, p *corev1.Pod, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, v := range p.Spec.Volumes {
		if v.Secret != nil {
			got[v.Name] = v.Secret.SecretName
		}
	}
	if len(got) != len(want) {
		t.Fatalf("secret volumes %v, want %v", got, want)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, vm := range etcdContainer(t, p).VolumeMounts {
		mounts[vm.Name] = vm
	}
	dirs := map[string]string{"tls-client": "/etc/etcd/tls/client", "tls-peer": "/etc/etcd/tls/peer"}
	for vol, secret := range want {
		if got[vol] != secret {
			t.Errorf("volume %s: Secret %q, want %q", vol, got[vol], secret)
		}
		if vm := mounts[vol]; vm.MountPath != dirs[vol] || !vm.ReadOnly {
			t.Errorf("mount of %s: %+v", vol, vm)
		}
	}
}

func TestOptionFlags(t *testing.T) {
	if got := flags(t, Build(newMember(), BuildOptions{})); got["--quota-backend-bytes"] != "" || got["--snapshot-count"] != "" {
		t.Errorf("no options, yet option flags: %v", got)
	}
	m := newMember(func(m *v1alpha1.EtcdMember) {
		m.Spec.Options = &v1alpha1.EtcdOptions{
			QuotaBackendBytes:       ptr.To[int64](8 << 30),
			AutoCompactionMode:      v1alpha1.AutoCompactionPeriodic,
			AutoCompactionRetention: "1h30m",
			SnapshotCount:           ptr.To[int64](50000),
		}
	})
	got := flags(t, Build(m, BuildOptions{}))
	for k, v := range map[string]string{
		"--quota-backend-bytes":       "8589934592",
		"--auto-compaction-mode":      "periodic",
		"--auto-compaction-retention": "1h30m",
		"--snapshot-count":            "50000",
	} {
		if got[k] != v {
			t.Errorf("%s=%q, want %q", k, got[k], v)
		}
	}
}

func TestDataVolume(t *testing.T) {
	data := func(p *corev1.Pod) corev1.Volume {
		for _, v := range p.Spec.Volumes {
			if v.Name == "data" {
				return v
			}
		}
		t.Fatal("no data volume")
		return corev1.Volume{}
	}
	p := Build(newMember(), BuildOptions{})
	if v := data(p); v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "data-m1" || v.EmptyDir != nil {
		t.Errorf("disk member: %+v", v.VolumeSource)
	}
	mem := newMember(func(m *v1alpha1.EtcdMember) { m.Spec.Storage.Medium = v1alpha1.StorageMediumMemory })
	v := data(Build(mem, BuildOptions{}))
	if v.EmptyDir == nil || v.PersistentVolumeClaim != nil || v.EmptyDir.Medium != corev1.StorageMediumMemory ||
		v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.Cmp(resource.MustParse("2Gi")) != 0 {
		t.Errorf("memory member: %+v", v.VolumeSource)
	}
	if vm := etcdContainer(t, p).VolumeMounts[0]; vm.Name != "data" || vm.MountPath != "/var/lib/etcd" {
		t.Errorf("data mount %+v", vm)
	}
}

func TestProbes(t *testing.T) {
	c := etcdContainer(t, Build(newMember(), BuildOptions{}))
	l := c.LivenessProbe
	if l == nil || l.TCPSocket == nil || l.TCPSocket.Port.IntValue() != 2380 {
		t.Fatalf("liveness must be a TCP check of the peer port: %+v", l)
	}
	if l.HTTPGet != nil || l.Exec != nil || l.GRPC != nil {
		t.Errorf("liveness must not be quorum-aware (no /health): %+v", l.ProbeHandler)
	}
	if l.InitialDelaySeconds != 15 || l.PeriodSeconds != 10 || l.FailureThreshold != 3 {
		t.Errorf("liveness timings %d/%d/%d", l.InitialDelaySeconds, l.PeriodSeconds, l.FailureThreshold)
	}
	r := c.ReadinessProbe
	if r == nil || r.HTTPGet == nil || r.HTTPGet.Path != "/health" || r.HTTPGet.Port.IntValue() != 2381 ||
		r.HTTPGet.Scheme != corev1.URISchemeHTTP {
		t.Fatalf("readiness must GET /health on 2381: %+v", r)
	}
	if r.PeriodSeconds != 5 || r.FailureThreshold != 3 {
		t.Errorf("readiness timings %d/%d", r.PeriodSeconds, r.FailureThreshold)
	}
}

func TestResources(t *testing.T) {
	got := etcdContainer(t, Build(newMember(), BuildOptions{})).Resources
	if got.Requests.Cpu().String() != "100m" || got.Requests.Memory().String() != "128Mi" || len(got.Limits) != 0 {
		t.Errorf("default resources %+v", got)
	}
	spec := corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
	m := newMember(func(m *v1alpha1.EtcdMember) { m.Spec.Resources = spec })
	got = etcdContainer(t, Build(m, BuildOptions{})).Resources
	if len(got.Requests) != 0 || got.Limits.Memory().String() != "1Gi" {
		t.Errorf("spec resources not used as they are: %+v", got)
	}
}

// The Pods tolerate a not-ready or unreachable node for an explicit
// NodeLossTolerationSeconds, not the apiserver's configurable default, and
// tolerate nothing else.
func TestNodeLossTolerations(t *testing.T) {
	p := Build(newMember(), BuildOptions{})
	got := map[string]int64{}
	for _, tol := range p.Spec.Tolerations {
		if tol.Effect != corev1.TaintEffectNoExecute || tol.Operator != corev1.TolerationOpExists || tol.TolerationSeconds == nil {
			t.Fatalf("toleration %+v: want Exists, NoExecute, with seconds", tol)
		}
		got[tol.Key] = *tol.TolerationSeconds
	}
	want := map[string]int64{corev1.TaintNodeNotReady: NodeLossTolerationSeconds, corev1.TaintNodeUnreachable: NodeLossTolerationSeconds}
	if len(got) != len(want) || got[corev1.TaintNodeNotReady] != want[corev1.TaintNodeNotReady] ||
		got[corev1.TaintNodeUnreachable] != want[corev1.TaintNodeUnreachable] {
		t.Errorf("tolerations %v, want %v", got, want)
	}
}
