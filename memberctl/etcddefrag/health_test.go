package etcddefrag

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

func testView(leader uint64, names ...string) *view {
	v := &view{leader: leader}
	for i, n := range names {
		v.members = append(v.members, member{m: &v1alpha1.EtcdMember{ObjectMeta: metav1.ObjectMeta{Name: n}},
			status: etcd.Status{MemberID: uint64(i + 1), Leader: leader}})
	}
	return v
}

// TestNextLeavesTheLeaderLast: followers in name order, the current leader
// last, also when leadership moved to a member not yet done.
func TestNextLeavesTheLeaderLast(t *testing.T) {
	order := func(v *view, done map[string]bool) []string {
		var out []string
		for {
			m, role := v.next(func(n string) bool { return done[n] })
			if m == nil {
				return out
			}
			out = append(out, m.m.Name+"/"+string(role))
			done[m.m.Name] = true
			if len(out) > 10 {
				t.Fatal("next never ends")
			}
		}
	}
	if got := order(testView(1, "a", "b", "c"), map[string]bool{}); got[2] != "a/Leader" || got[0] != "b/Follower" {
		t.Errorf("leader a: order %v, want b, c, then a", got)
	}
	// a and b were done; leadership moved from a to c: c is still last,
	// and nothing is redone.
	if got := order(testView(3, "a", "b", "c"), map[string]bool{"a": true, "b": true}); len(got) != 1 || got[0] != "c/Leader" {
		t.Errorf("after the move: %v, want [c/Leader]", got)
	}
}

// TestUnready: a member short, one without a Pod, a learner or one being
// removed holds the defragmentation back.
func TestUnready(t *testing.T) {
	m := func(name string, pod string, voter bool) v1alpha1.EtcdMember {
		return v1alpha1.EtcdMember{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1alpha1.EtcdMemberStatus{PodName: pod, IsVoter: voter}}
	}
	whole := []v1alpha1.EtcdMember{m("a", "a", true), m("b", "b", true), m("c", "c", true)}
	if why := unready(whole, 3); why != "" {
		t.Errorf("whole cluster: %q", why)
	}
	for name, c := range map[string]struct {
		members []v1alpha1.EtcdMember
		desired int
	}{
		"short":   {whole[:2], 3},
		"no Pod":  {[]v1alpha1.EtcdMember{whole[0], whole[1], m("c", "", true)}, 3},
		"learner": {[]v1alpha1.EtcdMember{whole[0], whole[1], m("c", "c", false)}, 3},
		"paused":  {nil, 0},
	} {
		if unready(c.members, c.desired) == "" {
			t.Errorf("%s: not held back", name)
		}
	}
}
