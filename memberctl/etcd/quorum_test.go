package etcd

import "testing"

func TestMajority(t *testing.T) {
	for voters, want := range map[int]int{1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 7: 4} {
		if got := Majority(voters); got != want {
			t.Errorf("Majority(%d) = %d, want %d", voters, got, want)
		}
	}
	if !HasQuorum(0, 0) || !HasQuorum(2, 3) || HasQuorum(1, 3) || HasQuorum(2, 4) {
		t.Error("HasQuorum disagrees with raft's majority")
	}
}
