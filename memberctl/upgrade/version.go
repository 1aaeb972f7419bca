package upgrade

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is an etcd release version, major.minor.patch.
type Version struct {
	Major, Minor, Patch int
}

// maxPart bounds each number: far above any etcd release, and small
// enough that Minor+1 and comparisons never overflow.
const maxPart = 1<<31 - 2

// Parse reads "major.minor.patch" as etcd tags its releases (without the
// "v"). It refuses pre-releases, signs, spaces and leading zeros: "3.06.1"
// and "3.6.1" would otherwise be one version under two spellings, and a
// spelling is what SupportedVersions and the image tags match on.
func Parse(s string) (Version, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return Version{}, fmt.Errorf("%s is not an etcd release version (major.minor.patch)", quote(s))
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || v > maxPart || strconv.Itoa(v) != p {
			return Version{}, fmt.Errorf("%s is not an etcd release version (major.minor.patch)", quote(s))
		}
		n[i] = v
	}
	return Version{Major: n[0], Minor: n[1], Patch: n[2]}, nil
}

// String is the version as Parse reads it.
func (v Version) String() string {
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
}

// minor is "major.minor", as etcd names a release line and its cluster version.
func (v Version) minor() string {
	return fmt.Sprintf("%d.%d", v.Major, v.Minor)
}

// sameMinor reports whether v and o are releases of one minor.
func (v Version) sameMinor(o Version) bool {
	return v.Major == o.Major && v.Minor == o.Minor
}

// Compare orders versions: negative when v is older than o, 0 when equal,
// positive when newer.
func (v Version) Compare(o Version) int {
	for _, d := range [3]int{v.Major - o.Major, v.Minor - o.Minor, v.Patch - o.Patch} {
		if d != 0 {
			return d
		}
	}
	return 0
}

// Less orders version strings oldest first; a string that does not parse
// sorts after every version, and such strings among themselves by bytes.
// It lets callers sort what members report without dropping anything.
func Less(a, b string) bool {
	va, errA := Parse(a)
	vb, errB := Parse(b)
	switch {
	case errA == nil && errB == nil:
		return va.Compare(vb) < 0
	case errA == nil || errB == nil:
		return errA == nil
	default:
		return a < b
	}
}

// quoteLimit bounds how much of an input a message repeats: a member's
// reported version is whatever its etcd said, and a refusal becomes a
// condition message.
const quoteLimit = 40

// quote renders an input for a message: Go-quoted (one line whatever it
// holds) and cut to quoteLimit bytes.
func quote(s string) string {
	if len(s) > quoteLimit {
		return strconv.Quote(s[:quoteLimit]) + "..."
	}
	return strconv.Quote(s)
}

// MinorOf is the "major.minor" of a release version, as etcd names a
// cluster version and a downgrade's target; "" when s does not parse.
// etcd reports storage versions and downgrade targets as "3.6.0", which
// MinorOf reads too.
func MinorOf(s string) string {
	v, err := Parse(s)
	if err != nil {
		return ""
	}
	return v.minor()
}

// IsMinorDowngrade reports whether from → to goes down one minor as etcd
// allows it (Check's MinorDowngrade): the change that needs etcd's
// downgrade enabled before a member of the lower minor may run.
func IsMinorDowngrade(from, to string) bool {
	k, err := Check(from, to)
	return err == nil && k == MinorDowngrade
}
