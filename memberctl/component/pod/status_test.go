package pod

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func podWith(mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{}
	mutate(p)
	return p
}

func etcdCS(cs corev1.ContainerStatus) func(*corev1.Pod) {
	cs.Name = ContainerName
	return func(p *corev1.Pod) { p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "sidecar"}, cs} }
}

func terminated(reason string) *corev1.ContainerStateTerminated {
	return &corev1.ContainerStateTerminated{Reason: reason, ExitCode: 1}
}

func TestIsTerminal(t *testing.T) {
	for phase, want := range map[corev1.PodPhase]bool{
		corev1.PodPending: false, corev1.PodRunning: false, corev1.PodUnknown: false,
		corev1.PodSucceeded: true, corev1.PodFailed: true,
	} {
		if got := IsTerminal(podWith(func(p *corev1.Pod) { p.Status.Phase = phase })); got != want {
			t.Errorf("%s: %v", phase, got)
		}
	}
}

func TestIsShutdownTerminationAndReady(t *testing.T) {
	cond := func(ty corev1.PodConditionType, s corev1.ConditionStatus) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Status.Conditions = []corev1.PodCondition{{Type: ty, Status: s}} }
	}
	for name, tc := range map[string]struct {
		pod             *corev1.Pod
		shutdown, ready bool
	}{
		"empty":                   {&corev1.Pod{}, false, false},
		"node shutdown":           {podWith(func(p *corev1.Pod) { p.Status.Reason = "Terminated" }), true, false},
		"evicted":                 {podWith(func(p *corev1.Pod) { p.Status.Reason = "Evicted" }), false, false},
		"disruption target":       {podWith(cond(corev1.DisruptionTarget, corev1.ConditionTrue)), true, false},
		"disruption target=false": {podWith(cond(corev1.DisruptionTarget, corev1.ConditionFalse)), false, false},
		"ready":                   {podWith(cond(corev1.PodReady, corev1.ConditionTrue)), false, true},
		"not ready":               {podWith(cond(corev1.PodReady, corev1.ConditionFalse)), false, false},
	} {
		if got := IsShutdownTermination(tc.pod); got != tc.shutdown {
			t.Errorf("%s: IsShutdownTermination=%v", name, got)
		}
		if got := IsReady(tc.pod); got != tc.ready {
			t.Errorf("%s: IsReady=%v", name, got)
		}
	}
}

func TestIsServing(t *testing.T) {
	ready := func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"running and ready": {podWith(ready), true},
		"not ready":         {podWith(func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }), false},
		// A stopped Pod's last Ready condition may still say True: the
		// kubelet writes the phase and the condition in one status update,
		// and a node that shuts down may not write the condition at all.
		"succeeded, ready left over": {podWith(func(p *corev1.Pod) { ready(p); p.Status.Phase = corev1.PodSucceeded }), false},
		"failed, ready left over":    {podWith(func(p *corev1.Pod) { ready(p); p.Status.Phase = corev1.PodFailed }), false},
		"being deleted":              {podWith(func(p *corev1.Pod) { ready(p); p.DeletionTimestamp = &metav1.Time{Time: time.Now()} }), false},
	} {
		if got := IsServing(tc.pod); got != tc.want {
			t.Errorf("%s: IsServing=%v", name, got)
		}
	}
}

func TestOwnedBy(t *testing.T) {
	ref := func(uid types.UID, controller bool) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{UID: uid, Controller: ptr.To(controller), Name: "x", Kind: "EtcdMember"}}
		}
	}
	if !OwnedBy(podWith(ref("u1", true)), "u1") {
		t.Error("controller ref to u1")
	}
	if OwnedBy(podWith(ref("u1", false)), "u1") {
		t.Error("a non-controller ref must not count")
	}
	if OwnedBy(podWith(ref("u0", true)), "u1") || OwnedBy(&corev1.Pod{}, "u1") || OwnedBy(&corev1.Pod{}, "") {
		t.Error("other UID or no ref")
	}
}

func TestEtcdContainerStuck(t *testing.T) {
	deleting := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"no status": {&corev1.Pod{}, false},
		"crash loop": {podWith(etcdCS(corev1.ContainerStatus{RestartCount: 5,
			LastTerminationState: corev1.ContainerState{Terminated: terminated("Error")}})), true},
		"below threshold": {podWith(etcdCS(corev1.ContainerStatus{RestartCount: 4})), false},
		"ready":           {podWith(etcdCS(corev1.ContainerStatus{RestartCount: 9, Ready: true})), false},
		"last OOM": {podWith(etcdCS(corev1.ContainerStatus{RestartCount: 9,
			LastTerminationState: corev1.ContainerState{Terminated: terminated("OOMKilled")}})), false},
		"current OOM": {podWith(etcdCS(corev1.ContainerStatus{RestartCount: 9,
			State: corev1.ContainerState{Terminated: terminated("OOMKilled")}})), false},
		"deleting": {podWith(func(p *corev1.Pod) {
			etcdCS(corev1.ContainerStatus{RestartCount: 9})(p)
			deleting(p)
		}), false},
	} {
		if got := EtcdContainerStuck(tc.pod, DefaultStuckRestartThreshold); got != tc.want {
			t.Errorf("%s: %v", name, got)
		}
	}
}

func TestEtcdContainerCrashing(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	endedAt := func(ago time.Duration) *corev1.ContainerStateTerminated {
		return &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1, FinishedAt: metav1.NewTime(now.Add(-ago))}
	}
	for name, tc := range map[string]struct {
		cs   corev1.ContainerStatus
		want bool
	}{
		"stuck": {corev1.ContainerStatus{RestartCount: 5,
			LastTerminationState: corev1.ContainerState{Terminated: endedAt(time.Minute)}}, true},
		"ready between two crashes": {corev1.ContainerStatus{RestartCount: 7, Ready: true,
			LastTerminationState: corev1.ContainerState{Terminated: endedAt(2 * time.Second)}}, true},
		"ready and steady since": {corev1.ContainerStatus{RestartCount: 7, Ready: true,
			LastTerminationState: corev1.ContainerState{Terminated: endedAt(crashRecent)}}, false},
		"ready after a few restarts": {corev1.ContainerStatus{RestartCount: 4, Ready: true,
			LastTerminationState: corev1.ContainerState{Terminated: endedAt(time.Second)}}, false},
		"ready, never crashed": {corev1.ContainerStatus{RestartCount: 9, Ready: true}, false},
	} {
		if got := EtcdContainerCrashing(podWith(etcdCS(tc.cs)), DefaultStuckRestartThreshold, now); got != tc.want {
			t.Errorf("%s: %v", name, got)
		}
	}
}

func TestTerminationReason(t *testing.T) {
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want string
	}{
		"none": {&corev1.Pod{}, ""},
		"pod reason wins": {podWith(func(p *corev1.Pod) {
			p.Status.Reason = "Terminated"
			etcdCS(corev1.ContainerStatus{State: corev1.ContainerState{Terminated: terminated("Error")}})(p)
		}), "Terminated"},
		"container terminated": {podWith(etcdCS(corev1.ContainerStatus{
			State: corev1.ContainerState{Terminated: terminated("Completed")}})), "Completed"},
		"last termination": {podWith(etcdCS(corev1.ContainerStatus{
			LastTerminationState: corev1.ContainerState{Terminated: terminated("Error")}})), "Error"},
	} {
		if got := TerminationReason(tc.pod); got != tc.want {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
}
