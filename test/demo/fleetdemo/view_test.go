package fleetdemo

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// cluster is an EtcdCluster of 3 whose status says what available says,
// as a lagging status would after a reboot.
func cluster(available bool) etcdv1.EtcdCluster {
	three := int32(3)
	ec := etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "etcd-a"}, Spec: etcdv1.EtcdClusterSpec{Replicas: &three}}
	st := metav1.ConditionFalse
	if available {
		st, ec.Status.ReadyMembers = metav1.ConditionTrue, 3
	}
	meta.SetStatusCondition(&ec.Status.Conditions, metav1.Condition{Type: etcdv1.ConditionAvailable, Status: st, Reason: "Test"})
	return ec
}

// member is a member Pod of etcd-a: "ready", "terminal", "pending" or
// "deleting" (Ready, but being deleted).
func member(name, state string) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{etcdv1.LabelCluster: "etcd-a"}}}
	p.Status.Phase = corev1.PodRunning
	ready := corev1.ConditionFalse
	switch state {
	case "ready":
		ready = corev1.ConditionTrue
	case "terminal":
		p.Status.Phase = corev1.PodSucceeded
	case "pending":
		p.Status.Phase = corev1.PodPending
	case "deleting":
		ready = corev1.ConditionTrue
		p.DeletionTimestamp = &metav1.Time{}
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}
	return p
}

func pods(states ...string) []corev1.Pod {
	var out []corev1.Pod
	for i, s := range states {
		out = append(out, member("etcd-a-"+string(rune('0'+i)), s))
	}
	return out
}

// TestViewOfReadsPodsAndEtcdNotStatus walks one cluster through a reboot
// as the live view sees it. Status says Available 3/3 throughout (it lags
// the Pods and etcd), and must never make a cluster healthy: a terminal
// Pod makes it down, and a cluster whose Pods are all Ready is healthy
// only when etcd says it is whole. etcd is asked only then. A view that
// reads status fails the first step.
func TestViewOfReadsPodsAndEtcdNotStatus(t *testing.T) {
	wasHealthy := map[string]bool{}
	for _, step := range []struct {
		name  string
		etcd  bool // what etcd says when asked
		pods  []corev1.Pod
		want  health
		ready int32
		asked bool // whether etcd is asked
	}{
		{"bootstrap: a member missing", true, pods("ready", "ready"), starting, 2, false},
		{"bootstrap: Pods Ready, etcd not yet whole", false, pods("ready", "ready", "ready"), starting, 3, true},
		{"bootstrap: etcd whole", true, pods("ready", "ready", "ready"), healthy, 3, true},
		{"reboot: one Pod terminal", true, pods("terminal", "ready", "ready"), down, 2, false},
		{"every Pod terminal", true, pods("terminal", "terminal", "terminal"), down, 0, false},
		{"quorum back, one Pod pending", true, pods("ready", "ready", "pending"), down, 2, false},
		{"a Ready Pod being deleted counts for nothing", true, pods("ready", "ready", "deleting"), down, 2, false},
		{"every Pod Ready, etcd not yet whole", false, pods("ready", "ready", "ready"), down, 3, true},
		{"whole again", true, pods("ready", "ready", "ready"), healthy, 3, true},
		{"no terminal Pod seen, a member missing, after having been healthy", true, pods("ready", "ready"), down, 2, false},
	} {
		asked := false
		rows := viewOf("w1", []etcdv1.EtcdCluster{cluster(true)}, step.pods, wasHealthy, func(c string, want int32) bool {
			asked = true
			if c != "etcd-a" || want != 3 {
				t.Errorf("%s: etcd asked about %s of %d", step.name, c, want)
			}
			return step.etcd
		})
		if len(rows) != 1 || rows[0].State != step.want || rows[0].Ready != step.ready || rows[0].Name != "w1/etcd-a" {
			t.Errorf("%s: %+v, want %s with %d ready", step.name, rows, step.want, step.ready)
		}
		if asked != step.asked {
			t.Errorf("%s: etcd asked %v, want %v", step.name, asked, step.asked)
		}
	}
}

func TestLiveViewPlainPrintsChanges(t *testing.T) {
	var b bytes.Buffer
	v := newLiveView(&b)
	if v.tty {
		t.Fatal("a buffer taken for a terminal")
	}
	a := clusterView{Name: "w1/etcd-a", State: starting, Ready: 1, Want: 3}
	c := clusterView{Name: "w1/etcd-b", State: starting, Ready: 0, Want: 3}
	v.show("bootstrap", 0, []clusterView{a, c}, "")
	v.show("bootstrap", 0, []clusterView{a, c}, "") // nothing changed
	a.Ready = 2
	v.show("bootstrap", 0, []clusterView{a, c}, "")
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[2], "w1/etcd-a") || !strings.Contains(lines[2], "ready 2/3") {
		t.Errorf("want one line per cluster, then one for the change; got\n%s", b.String())
	}
	if strings.Contains(b.String(), "\x1b") {
		t.Errorf("terminal escapes in plain output: %q", b.String())
	}
}

func TestLiveViewTerminalRedraws(t *testing.T) {
	var b bytes.Buffer
	v := newLiveView(&b)
	v.tty = true
	rows := []clusterView{{Name: "w1/etcd-a", State: down, Want: 3, Terminal: 3}, {Name: "w2/etcd-a", State: healthy, Ready: 3, Want: 3}}
	v.show("heal", 0, rows, "limiter: 2 waiting")
	first := b.Len()
	v.show("heal", 0, rows, "limiter: 1 waiting")
	second := b.String()[first:]
	if !strings.HasPrefix(second, "\x1b[3A") {
		t.Errorf("second draw does not go back up the 3 lines of the first: %q", second)
	}
	if n := strings.Count(second, "\x1b[2K"); n != 3 {
		t.Errorf("second draw clears %d lines, want 3", n)
	}
	v.done()
	b.Reset()
	v.show("next", 0, rows, "")
	if strings.Contains(b.String(), "\x1b[3A") {
		t.Error("a new phase draws over the last phase's table")
	}
}
