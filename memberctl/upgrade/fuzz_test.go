package upgrade

import (
	"slices"
	"strings"
	"testing"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// maxMessage bounds a refusal: it becomes a condition message and an Event.
const maxMessage = 512

// FuzzCheck: Check never panics; a refusal is one bounded line; an allowed
// change is between well-formed versions of one major at most one minor
// apart, to a supported one, and a minor upgrade starts at its minimum; its
// kind is what the two versions say; and between supported versions every
// allowed change can be undone (the reverse is allowed too).
func FuzzCheck(f *testing.F) {
	for _, s := range [][2]string{
		{"3.6.16", "3.7.3"}, {"3.7.3", "3.6.14"}, {"3.6.5", "3.7.3"}, {"3.6.5", "3.6.16"},
		{"3.5.33", "3.7.3"}, {"3.8.0", "3.7.1"}, {"", "3.6.16"}, {"3.6.16", ""},
		{"v3.6.16", "3.6.16"}, {"3.06.16", "3.6.16"}, {"4.0.0", "3.7.3"}, {"3.6.16\n", "3.6.16"},
		{"3.6.16", "3.6.17"}, {"3.6.16", "3.5.33"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, from, to string) {
		kind, err := Check(from, to)
		if (err != nil) != (kind == Refused) {
			t.Fatalf("Check(%q, %q) = %s with error %v", from, to, kind, err)
		}
		if err != nil {
			if msg := err.Error(); msg == "" || strings.Contains(msg, "\n") || len(msg) > maxMessage {
				t.Fatalf("Check(%q, %q): refusal %q is not one line of at most %d bytes", from, to, msg, maxMessage)
			}
			return
		}
		allowed(t, from, to, kind)
		if slices.Contains(v1alpha1.SupportedVersions, from) {
			if back, err := Check(to, from); err != nil || back == Refused {
				t.Fatalf("Check(%q, %q) allowed, its reverse refused: %v", from, to, err)
			}
		}
	})
}

// allowed checks what an allowed change must be.
func allowed(t *testing.T, from, to string, kind Kind) {
	t.Helper()
	if !slices.Contains(v1alpha1.SupportedVersions, to) {
		t.Fatalf("Check(%q, %q) allowed an unsupported target", from, to)
	}
	f, errF := Parse(from)
	tv, errT := Parse(to)
	if errF != nil || errT != nil || f.String() != from || tv.String() != to {
		t.Fatalf("Check(%q, %q) allowed a malformed version", from, to)
	}
	if f.Major != tv.Major || f.Minor-tv.Minor > 1 || tv.Minor-f.Minor > 1 {
		t.Fatalf("Check(%q, %q) allowed a major change or a skipped minor", from, to)
	}
	if kind != kindOf(f, tv) {
		t.Fatalf("Check(%q, %q) = %s, want %s", from, to, kind, kindOf(f, tv))
	}
	if kind == MinorUpgrade && f.Compare(requiredBeforeNextMinor[f.minor()]) < 0 {
		t.Fatalf("Check(%q, %q) allowed an upgrade below %s", from, to, requiredBeforeNextMinor[f.minor()])
	}
}
