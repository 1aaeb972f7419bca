package pod

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

// FuzzBuild builds the Pod of a member of any EtcdCluster the CRD admits
// (name, namespace, storage medium, TLS, voter or learner) and checks what
// the apiserver and the kubelet would otherwise reject later, where nobody
// looks: every derived name is a valid DNS label or subdomain, every label
// value is valid, every mount has its volume, container names are unique,
// and etcd is told its own name and peer URL.
func FuzzBuild(f *testing.F) {
	f.Add("etcd", "default", "abcde", false, false, true)
	f.Add("a"+strings.Repeat("b", v1alpha1.MaxClusterNameLength-1), strings.Repeat("n", 63), "zzzzz", true, true, false)
	f.Fuzz(func(t *testing.T, cluster, namespace, suffix string, memory, tls, voter bool) {
		if !admitted(cluster, namespace, suffix) {
			t.Skip("the CRD and the apiserver refuse these names")
		}
		m := newMember(func(m *v1alpha1.EtcdMember) {
			m.Name, m.Namespace = cluster+"-"+suffix, namespace // as GenerateName makes it
			m.Spec.ClusterName = cluster
			m.Status.IsVoter = voter
			if memory {
				m.Spec.Storage.Medium = v1alpha1.StorageMediumMemory
			}
			if tls {
				m.Spec.TLS = &v1alpha1.MemberTLS{ClientServerSecretRef: "client-" + cluster, ClientMTLS: true, PeerSecretRef: "peer-" + cluster}
			}
		})
		p := Build(m, BuildOptions{})
		for what, errs := range map[string][]string{
			"pod name":            validation.IsDNS1123Subdomain(p.Name),
			"hostname":            validation.IsDNS1123Label(p.Spec.Hostname),
			"subdomain":           validation.IsDNS1123Label(p.Spec.Subdomain),
			"client Service name": validation.IsDNS1035Label(etcd.ClientService(cluster)),
			"PVC name":            validation.IsDNS1123Subdomain(etcd.PVCName(m.Name)),
			"peer host":           validation.IsDNS1123Subdomain(etcd.Host(namespace, cluster, m.Name)),
		} {
			if len(errs) > 0 {
				t.Fatalf("%s invalid for cluster %q member %q: %v", what, cluster, m.Name, errs)
			}
		}
		for k, v := range p.Labels {
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				t.Fatalf("label %s=%q invalid: %v", k, v, errs)
			}
		}
		checkMountsAndNames(t, p)
		args := strings.Join(p.Spec.Containers[0].Command, " ") + " " + strings.Join(p.Spec.Containers[0].Args, " ")
		if !strings.Contains(args, "--name="+m.Name) || !strings.Contains(args, etcd.MemberPeerURL(m)) {
			t.Fatalf("etcd is not told its name and peer URL: %s", args)
		}
	})
}

// admitted reports whether the CRD's name rule and the apiserver's
// namespace and generated-name rules accept the inputs.
func admitted(cluster, namespace, suffix string) bool {
	return len(cluster) <= v1alpha1.MaxClusterNameLength && len(validation.IsDNS1035Label(cluster)) == 0 &&
		len(validation.IsDNS1123Label(namespace)) == 0 &&
		len(suffix) == 5 && len(validation.IsDNS1123Label("a"+suffix)) == 0
}

func checkMountsAndNames(t *testing.T, p *corev1.Pod) {
	t.Helper()
	volumes := map[string]bool{}
	for _, v := range p.Spec.Volumes {
		if volumes[v.Name] {
			t.Fatalf("volume %s twice", v.Name)
		}
		volumes[v.Name] = true
	}
	names := map[string]bool{}
	for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		if names[c.Name] {
			t.Fatalf("container %s twice", c.Name)
		}
		names[c.Name] = true
		for _, vm := range c.VolumeMounts {
			if !volumes[vm.Name] {
				t.Fatalf("container %s mounts %s, which the Pod lacks", c.Name, vm.Name)
			}
		}
	}
	if len(p.Spec.Containers) == 0 {
		t.Fatal("no container")
	}
}
