package upgrade

import (
	"slices"
	"strings"
	"testing"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// testSupported reaches rules no entry of SupportedVersions does today:
// 3.5 → 3.6 and its minimum patch, and a minor without a known rule (3.8).
var testSupported = []string{"3.5.20", "3.5.26", "3.5.33", "3.6.5", "3.6.11", "3.6.16", "3.7.0", "3.7.3", "3.8.0"}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name, from, to string
		want           Kind
		// refusal holds every fragment the message must carry.
		refusal []string
	}{
		{"no change", "3.6.16", "3.6.16", Same, nil},
		{"patch upgrade", "3.6.5", "3.6.16", Patch, nil},
		{"patch downgrade", "3.6.16", "3.6.5", Patch, nil},
		{"patch upgrade from a release etcdfleet no longer runs", "3.6.1", "3.6.16", Patch, nil},
		{"3.5 → 3.6 at the required patch", "3.5.26", "3.6.5", MinorUpgrade, nil},
		{"3.5 → 3.6 above it", "3.5.33", "3.6.16", MinorUpgrade, nil},
		{"3.5 → 3.6 below it", "3.5.20", "3.6.16", Refused,
			[]string{"etcd 3.5.20 → 3.6.16", "requires 3.5.26 or later before an upgrade to 3.6", "upgrade to 3.5.26 or later first", "3.5.26, 3.5.33"}},
		{"3.6 → 3.7 at the required patch", "3.6.11", "3.7.3", MinorUpgrade, nil},
		{"3.6 → 3.7 below it", "3.6.5", "3.7.0", Refused,
			[]string{"requires 3.6.11 or later before an upgrade to 3.7", "upgrade to 3.6.11 or later first (etcdfleet runs 3.6.11, 3.6.16)"}},
		{"3.7 → 3.8 has no known rule", "3.7.3", "3.8.0", Refused, []string{"knows no patch release of 3.7"}},
		{"3.5 → 3.7 skips 3.6", "3.5.33", "3.7.3", Refused,
			[]string{"skips a minor version", "move to a 3.6 release first (etcdfleet runs 3.6.5, 3.6.11, 3.6.16)"}},
		{"3.7 → 3.6 downgrade", "3.7.3", "3.6.5", MinorDowngrade, nil},
		{"3.6 → 3.5 downgrade: 3.6 has the downgrade API", "3.6.16", "3.5.33", MinorDowngrade, nil},
		{"3.5 → 3.4 has no downgrade API", "3.5.33", "3.4.0", Refused, []string{"etcdfleet does not run etcd 3.4.0"}},
		{"3.8 → 3.6 skips 3.7 down", "3.8.0", "3.6.16", Refused, []string{"skips a minor version", "move to a 3.7 release first"}},
		{"a major change", "2.3.8", "3.5.33", Refused, []string{"changes the major version"}},
		{"an unsupported target", "3.6.16", "3.6.17", Refused, []string{"does not run etcd 3.6.17", "it runs 3.5.20, "}},
		{"a malformed target", "3.6.16", "v3.6.16", Refused, []string{`the target: "v3.6.16" is not an etcd release version`}},
		{"a malformed running version", "3.6.16-rc.0", "3.6.16", Refused, []string{`the running version: "3.6.16-rc.0" is not`}},
		{"an empty running version", "", "3.6.16", Refused, []string{`the running version: "" is not`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := check(testSupported, c.from, c.to)
			if got != c.want {
				t.Fatalf("check(%s, %s) = %s (%v), want %s", c.from, c.to, got, err, c.want)
			}
			if (err != nil) != (c.want == Refused) {
				t.Fatalf("check(%s, %s) error %v with kind %s", c.from, c.to, err, got)
			}
			for _, frag := range c.refusal {
				if !strings.Contains(err.Error(), frag) {
					t.Errorf("check(%s, %s): %q lacks %q", c.from, c.to, err, frag)
				}
			}
		})
	}
}

func TestDowngradeAPIRule(t *testing.T) {
	// 3.5.33 → 3.4.x is refused for its rule, not only for the target.
	if _, err := check([]string{"3.4.30", "3.5.33"}, "3.5.33", "3.4.30"); err == nil || !strings.Contains(err.Error(), "only from 3.6 on") {
		t.Fatalf("3.5 → 3.4: %v, want the downgrade API rule", err)
	}
}

// TestEveryStepBetweenSupportedMinors: supporting a new minor without its
// upgrade rule fails here, not in a user's cluster; and every supported
// release can go one minor up and down to every supported release there.
func TestEveryStepBetweenSupportedMinors(t *testing.T) {
	for _, from := range v1alpha1.SupportedVersions {
		for _, to := range v1alpha1.SupportedVersions {
			kind, err := Check(from, to)
			if err != nil {
				t.Errorf("Check(%s, %s): %v; every supported release lies within one minor of the others and meets its minimum", from, to, err)
			}
			f, _ := Parse(from)
			tv, _ := Parse(to)
			if want := kindOf(f, tv); kind != want {
				t.Errorf("Check(%s, %s) = %s, want %s", from, to, kind, want)
			}
		}
	}
}

func kindOf(f, t Version) Kind {
	switch {
	case f == t:
		return Same
	case f.Minor == t.Minor:
		return Patch
	case f.Minor < t.Minor:
		return MinorUpgrade
	default:
		return MinorDowngrade
	}
}

func TestCheckRefusesOffTheSupportedList(t *testing.T) {
	// 3.6.5 ran until the floor rose: it may leave for a supported 3.6, not
	// skip the 3.6.11 requirement on its way to 3.7.
	if k, err := Check("3.6.5", "3.6.16"); err != nil || k != Patch {
		t.Errorf("3.6.5 → 3.6.16: %s, %v; want a patch change", k, err)
	}
	_, err := Check("3.6.5", "3.7.3")
	if err == nil || !strings.Contains(err.Error(), "upgrade to 3.6.11 or later first (etcdfleet runs 3.6.14, 3.6.15, 3.6.16)") {
		t.Errorf("3.6.5 → 3.7.3: %v", err)
	}
}

func TestParse(t *testing.T) {
	for _, ok := range []string{"0.0.0", "3.6.16", "3.10.0", "10.0.1"} {
		if v, err := Parse(ok); err != nil || v.String() != ok {
			t.Errorf("Parse(%q) = %v, %v", ok, v, err)
		}
	}
	for _, bad := range []string{"", "3.6", "3.6.16.1", "v3.6.16", "3.06.1", "3.6.-1", "3.6.+1", " 3.6.1", "3.6.1-rc.0", "3.6.99999999999", "3..1"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func TestLess(t *testing.T) {
	got := []string{"3.7.1", "x", "3.6.9", "3.6.14", "", "3.10.0"}
	slices.SortFunc(got, func(a, b string) int {
		if Less(a, b) {
			return -1
		}
		if Less(b, a) {
			return 1
		}
		return 0
	})
	want := []string{"3.6.9", "3.6.14", "3.7.1", "3.10.0", "", "x"}
	if !slices.Equal(got, want) {
		t.Errorf("sorted %q, want %q", got, want)
	}
}

func TestJoinVersion(t *testing.T) {
	for _, c := range []struct {
		running []string
		want    string
	}{
		{nil, ""},
		{[]string{"garbage"}, ""},
		{[]string{"3.6.16"}, "3.6.16"},
		{[]string{"3.6.5", "3.6.16", "3.6.14"}, "3.6.16"},
		{[]string{"3.7.3", "3.6.14", "3.7.1"}, "3.6.14"},
		{[]string{"garbage", "3.7.3"}, "3.7.3"},
		{[]string{"4.0.0", "3.7.3"}, "3.7.3"},
	} {
		if got := JoinVersion(c.running); got != c.want {
			t.Errorf("JoinVersion(%q) = %q, want %q", c.running, got, c.want)
		}
	}
}

func TestMinorOfAndIsMinorDowngrade(t *testing.T) {
	for in, want := range map[string]string{"3.6.16": "3.6", "3.6.0": "3.6", "3.6": "", "": ""} {
		if got := MinorOf(in); got != want {
			t.Errorf("MinorOf(%q) = %q, want %q", in, got, want)
		}
	}
	if !IsMinorDowngrade("3.7.3", "3.6.16") || IsMinorDowngrade("3.6.16", "3.7.3") || IsMinorDowngrade("3.6.16", "3.6.14") || IsMinorDowngrade("3.7.3", "3.5.26") {
		t.Error("IsMinorDowngrade: want true only for one minor down from 3.6+")
	}
}

func TestCheckMemory(t *testing.T) {
	k, err := CheckMemory("3.7.3", "3.6.16")
	if k != Refused || err == nil || !strings.Contains(err.Error(), "a memory-backed cluster cannot go down a minor version") ||
		!strings.Contains(err.Error(), "new cluster at 3.6.16") {
		t.Fatalf("a memory-backed minor downgrade: got %v, %v", k, err)
	}
	for _, c := range [][2]string{{"3.6.16", "3.7.3"}, {"3.7.3", "3.7.1"}, {"3.6.5", "3.7.3"}, {"3.7.3", "3.7.3"}} {
		wk, werr := Check(c[0], c[1])
		if k, err := CheckMemory(c[0], c[1]); k != wk || (err == nil) != (werr == nil) {
			t.Errorf("%s → %s: CheckMemory says %v, %v; Check says %v, %v", c[0], c[1], k, err, wk, werr)
		}
	}
}
