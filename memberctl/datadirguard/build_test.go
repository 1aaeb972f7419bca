package datadirguard_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/datadirguard"
)

func member(medium v1alpha1.StorageMedium) *v1alpha1.EtcdMember {
	m := &v1alpha1.EtcdMember{}
	m.Spec.Storage.Medium = medium
	return m
}

func TestForMemberGuardsOnlyMemoryMembers(t *testing.T) {
	opts := datadirguard.Options{DataVolume: "data", DataDir: "/var/lib/etcd"}
	if c, v := datadirguard.ForMember(member(v1alpha1.StorageMediumDefault), opts); c != nil || v != nil {
		t.Fatalf("a PVC member needs no guard: %v %v", c, v)
	}
	cs, vols := datadirguard.ForMember(member(v1alpha1.StorageMediumMemory), opts)
	if len(cs) != 1 || len(vols) != 1 {
		t.Fatalf("want one init container and one volume, got %d, %d", len(cs), len(vols))
	}
	c, v := cs[0], vols[0]
	if c.Image != datadirguard.DefaultImage || c.Command[0] != datadirguard.AgentPath || c.Command[1] != datadirguard.Subcommand {
		t.Fatalf("guard runs %s %v", c.Image, c.Command)
	}
	if v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumDefault {
		t.Fatalf("the marker must live on a disk emptyDir, got %+v", v.VolumeSource)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, vm := range c.VolumeMounts {
		mounts[vm.Name] = vm
	}
	if d := mounts["data"]; d.MountPath != "/var/lib/etcd" || !d.ReadOnly {
		t.Fatalf("data mount %+v", d)
	}
	if _, ok := mounts[v.Name]; !ok {
		t.Fatalf("marker volume %s not mounted", v.Name)
	}
	if cs, _ := datadirguard.ForMember(member(v1alpha1.StorageMediumMemory), datadirguard.Options{Image: "reg/etcdfleet:dev"}); cs[0].Image != "reg/etcdfleet:dev" {
		t.Fatalf("image option ignored: %s", cs[0].Image)
	}
}

func guardPod(state, last *corev1.ContainerStateTerminated) *corev1.Pod {
	p := &corev1.Pod{}
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: datadirguard.ContainerName,
		State: corev1.ContainerState{Terminated: state}, LastTerminationState: corev1.ContainerState{Terminated: last}}}
	if state == nil {
		p.Status.InitContainerStatuses[0].State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
	}
	return p
}

func TestDataDirLost(t *testing.T) {
	lost := &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "DataDirLost: data dir /var/lib/etcd has no etcd data"}
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"nil pod":                      {nil, false},
		"no init containers":           {&corev1.Pod{}, false},
		"failed now":                   {guardPod(lost, nil), true},
		"failed last, backing off now": {guardPod(nil, lost), true},
		"completed":                    {guardPod(&corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}, nil), false},
		"failed for another reason":    {guardPod(&corev1.ContainerStateTerminated{ExitCode: 2, Message: "datadir-guard: read marker: EIO"}, nil), false},
		"message without a failure":    {guardPod(&corev1.ContainerStateTerminated{ExitCode: 0, Message: lost.Message}, nil), false},
	} {
		t.Run(name, func(t *testing.T) {
			got, msg := datadirguard.DataDirLost(tc.pod)
			if got != tc.want || (got && msg != lost.Message) {
				t.Fatalf("DataDirLost = %v, %q; want %v", got, msg, tc.want)
			}
		})
	}
	other := guardPod(lost, nil)
	other.Status.InitContainerStatuses[0].Name = "someone-else"
	if got, _ := datadirguard.DataDirLost(other); got {
		t.Fatal("only the guard's own status counts")
	}
}
