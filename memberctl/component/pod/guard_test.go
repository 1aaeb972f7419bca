package pod

import (
	"testing"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/datadirguard"
)

// A memory member's Pod runs the data-dir guard on its own data volume; a
// PVC member's Pod has no init container.
func TestMemoryMemberPodIsGuarded(t *testing.T) {
	if p := Build(newMember(), BuildOptions{}); len(p.Spec.InitContainers) != 0 {
		t.Fatalf("PVC member got init containers %v", p.Spec.InitContainers)
	}
	mem := newMember(func(m *v1alpha1.EtcdMember) { m.Spec.Storage.Medium = v1alpha1.StorageMediumMemory })
	p := Build(mem, BuildOptions{AgentImage: "registry.example/etcdfleet-manager:1"})
	if len(p.Spec.InitContainers) != 1 || p.Spec.InitContainers[0].Name != datadirguard.ContainerName {
		t.Fatalf("init containers %v", p.Spec.InitContainers)
	}
	guard := p.Spec.InitContainers[0]
	if guard.Image != "registry.example/etcdfleet-manager:1" {
		t.Errorf("agent image option ignored: %s", guard.Image)
	}
	volumes := map[string]bool{}
	for _, v := range p.Spec.Volumes {
		volumes[v.Name] = true
	}
	for _, vm := range guard.VolumeMounts {
		if !volumes[vm.Name] {
			t.Errorf("guard mounts %s, which the Pod lacks", vm.Name)
		}
		if vm.Name == dataVolume && vm.MountPath != DataDir {
			t.Errorf("guard sees the data volume at %s, etcd at %s", vm.MountPath, DataDir)
		}
	}
}
