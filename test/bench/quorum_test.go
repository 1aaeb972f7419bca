package bench

import (
	"testing"
	"time"
)

func TestQuorumOf(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	rep := func(terminal, ready float64) Replacement {
		return Replacement{Terminal: at(terminal), Ready: at(ready)}
	}
	for _, tc := range []struct {
		name         string
		n            int
		rs           []Replacement
		lost, regain float64
		needed       int
		never        bool
	}{
		{name: "one of three down keeps quorum", n: 3, rs: []Replacement{rep(0, 5)}, never: true},
		{name: "all three: lost with the second terminal, back with the second Ready",
			n: 3, rs: []Replacement{rep(0.3, 9), rep(0, 4), rep(0.1, 6)}, lost: 0.1, regain: 6, needed: 2},
		{name: "two of three: back with the first Ready",
			n: 3, rs: []Replacement{rep(1, 7), rep(0.5, 3)}, lost: 1, regain: 3, needed: 1},
		{name: "all five: lost with the third terminal, back with the third Ready",
			n: 5, rs: []Replacement{rep(0, 1), rep(0.1, 2), rep(0.2, 3), rep(0.3, 4), rep(0.4, 5)}, lost: 0.2, regain: 3, needed: 3},
		{name: "a single member", n: 1, rs: []Replacement{rep(2, 3)}, lost: 2, regain: 3, needed: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := QuorumOf(tc.n, tc.rs)
			if tc.never {
				if q != (Quorum{}) || q.Down() != 0 {
					t.Fatalf("quorum never lost, got %+v", q)
				}
				return
			}
			if !q.Lost.Equal(at(tc.lost)) || !q.Regained.Equal(at(tc.regain)) || q.Needed != tc.needed {
				t.Fatalf("got lost %v regained %v needed %d; want %v %v %d", q.Lost.Sub(t0), q.Regained.Sub(t0), q.Needed,
					at(tc.lost).Sub(t0), at(tc.regain).Sub(t0), tc.needed)
			}
			if want := at(tc.regain).Sub(at(tc.lost)); q.Down() != want {
				t.Fatalf("down %v, want %v", q.Down(), want)
			}
		})
	}
}
