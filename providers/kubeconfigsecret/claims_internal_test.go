package kubeconfigsecret

import (
	"testing"
	"time"
)

func TestRankClaimants(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		in   []claimant
		want string
	}{
		{"none", nil, ""},
		{"the oldest", []claimant{{name: "b", created: t0.Add(time.Second)}, {name: "c", created: t0}}, "c"},
		{"a vouched Secret before an older one", []claimant{{name: "old", created: t0}, {name: "new", vouched: true, created: t0.Add(time.Hour)}}, "new"},
		{"the oldest vouched one", []claimant{{name: "v2", vouched: true, created: t0.Add(2 * time.Second)},
			{name: "v1", vouched: true, created: t0.Add(time.Second)}, {name: "u", created: t0}}, "v1"},
		{"by name within a second", []claimant{{name: "z", created: t0}, {name: "a", created: t0}}, "a"},
	} {
		if got := rankClaimants(tc.in); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
		// Replicas list the claimants in any order and must agree.
		rev := make([]claimant, len(tc.in))
		for i, c := range tc.in {
			rev[len(tc.in)-1-i] = c
		}
		if got := rankClaimants(rev); got != tc.want {
			t.Errorf("%s, reversed: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
