package upgrade

import (
	"fmt"
	"slices"
	"strings"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// Kind is what a version change is, once allowed.
type Kind int

const (
	// Refused: etcd does not allow the change; Check's error says why.
	Refused Kind = iota
	// Same: from and to are one version; nothing changes.
	Same
	// Patch: another release of the same minor, newer or older.
	Patch
	// MinorUpgrade: a release of the next minor.
	MinorUpgrade
	// MinorDowngrade: a release of the previous minor, through etcd's
	// downgrade API.
	MinorDowngrade
)

func (k Kind) String() string {
	return [...]string{"refused", "no change", "a patch change", "a minor upgrade", "a minor downgrade"}[k]
}

// requiredBeforeNextMinor is, per minor, the oldest patch release from
// which etcd allows an upgrade to the next minor (sources in doc.go).
var requiredBeforeNextMinor = map[string]Version{
	"3.5": {3, 5, 26}, // before 3.6: the v3store zombie-member fix
	"3.6": {3, 6, 11}, // before 3.7
}

// firstMinorWithDowngradeAPI is the oldest minor a cluster can be
// downgraded from in place: etcd's downgrade API is 3.6's.
var firstMinorWithDowngradeAPI = Version{3, 6, 0}

// Check reports whether a cluster whose members run etcd `from` may move to
// etcd `to`, and what kind of change that is. A refusal is Refused with an
// error that names the rule and the next step. `to` must be one of
// v1alpha1.SupportedVersions; `from` need not be (see the package doc).
func Check(from, to string) (Kind, error) {
	return check(v1alpha1.SupportedVersions, from, to)
}

// CheckMemory is Check for a cluster whose members keep their data in
// memory. Such a member cannot restart on its data: a new member with a new
// ID replaces it at the new version. etcd's downgrade API restarts each
// member in place on its data, and it leaves no way to add a new member at
// the lower minor: enabling the downgrade lowers the cluster version at
// once, while a joining member of the lower minor then accepts only a
// cluster version one minor above its own (etcd 3.6's
// etcdserver/cluster_util.go, allowedVersionRange). So a memory-backed
// cluster cannot go down a minor; every other change is as Check says.
func CheckMemory(from, to string) (Kind, error) {
	k, err := Check(from, to)
	if k != MinorDowngrade {
		return k, err
	}
	t, _ := Parse(to) // Check parsed it
	return Refused, fmt.Errorf("etcd %s → %s: a memory-backed cluster cannot go down a minor version: etcd downgrades each "+
		"member in place on its data, a memory member loses its data with its Pod, and etcd %s refuses a new member while "+
		"a downgrade is enabled; restore a snapshot taken before the upgrade into a new cluster at %s instead", from, to, t.minor(), to)
}

// check is Check against a given list of supported versions, so that rules
// no supported version reaches today (3.5 → 3.6) are tested too.
func check(supported []string, from, to string) (Kind, error) {
	t, err := Parse(to)
	if err != nil {
		return Refused, fmt.Errorf("the target: %w", err)
	}
	if !slices.Contains(supported, to) {
		return Refused, fmt.Errorf("etcdfleet does not run etcd %s; it runs %s", to, strings.Join(supported, ", "))
	}
	f, err := Parse(from)
	if err != nil {
		return Refused, fmt.Errorf("the running version: %w", err)
	}
	switch {
	case f == t:
		return Same, nil
	case f.Major != t.Major:
		return Refused, fmt.Errorf("etcd %s → %s changes the major version, which etcd has no upgrade or downgrade for", f, t)
	case f.Minor == t.Minor:
		return Patch, nil
	case t.Minor == f.Minor+1:
		return minorUpgrade(supported, f, t)
	case t.Minor == f.Minor-1:
		return minorDowngrade(f, t)
	default:
		return Refused, skipped(supported, f, t)
	}
}

// minorUpgrade allows f → t (t one minor up) from f's required patch on.
func minorUpgrade(supported []string, f, t Version) (Kind, error) {
	need, known := requiredBeforeNextMinor[f.minor()]
	if !known {
		return Refused, fmt.Errorf("etcd %s → %s: etcdfleet knows no patch release of %s that etcd requires before an upgrade to %s",
			f, t, f.minor(), t.minor())
	}
	if f.Compare(need) < 0 {
		return Refused, fmt.Errorf("etcd %s → %s: etcd requires %s or later before an upgrade to %s; upgrade to %s or later first (%s)",
			f, t, need, t.minor(), need, releasesFrom(supported, need))
	}
	return MinorUpgrade, nil
}

// minorDowngrade allows f → t (t one minor down) from a minor that has
// etcd's downgrade API.
func minorDowngrade(f, t Version) (Kind, error) {
	if (Version{f.Major, f.Minor, 0}).Compare(firstMinorWithDowngradeAPI) < 0 {
		return Refused, fmt.Errorf("etcd %s → %s: etcd downgrades in place only from %s on (its downgrade API); "+
			"a %s cluster goes back only by a restore of a snapshot taken before its upgrade", f, t, firstMinorWithDowngradeAPI.minor(), f.minor())
	}
	return MinorDowngrade, nil
}

// skipped refuses a change of more than one minor and names the minor to
// pass through first.
func skipped(supported []string, f, t Version) error {
	step := Version{f.Major, f.Minor + 1, 0}
	if t.Minor < f.Minor {
		step.Minor = f.Minor - 1
	}
	return fmt.Errorf("etcd %s → %s skips a minor version; etcd changes one minor at a time: move to a %s release first (%s)",
		f, t, step.minor(), releasesFrom(supported, step))
}

// releasesFrom names the supported releases of min's minor at min or
// later: the ones a user can move to as the next step.
func releasesFrom(supported []string, min Version) string {
	var out []string
	for _, s := range supported {
		if v, err := Parse(s); err == nil && v.sameMinor(min) && v.Compare(min) >= 0 {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return "etcdfleet runs no such release: make that step outside etcdfleet"
	}
	return "etcdfleet runs " + strings.Join(out, ", ")
}

// JoinVersion is the version a new member takes while a change is refused:
// the newest release of the oldest minor among running, which joins
// whatever cluster version etcd agreed on (see the package doc). Entries
// that do not parse are ignored; "" when none parses.
func JoinVersion(running []string) string {
	var best *Version
	for _, s := range running {
		v, err := Parse(s)
		if err != nil {
			continue
		}
		switch {
		case best == nil, v.Major < best.Major || (v.Major == best.Major && v.Minor < best.Minor):
			best = &v
		case v.sameMinor(*best) && v.Patch > best.Patch:
			best = &v
		}
	}
	if best == nil {
		return ""
	}
	return best.String()
}
