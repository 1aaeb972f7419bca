package etcdcluster

import (
	"strings"
	"testing"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

// Pure: which survivor a lost majority is recovered from, and when that
// is refused. Runs without an apiserver: go test -run TestChooseSurvivor.

func answering(name string, raftIndex uint64, rev int64) survivorReport {
	return survivorReport{name: name, what: "its Pod is Running", answered: true,
		status: etcd.Status{RaftIndex: raftIndex, Revision: rev}}
}

func TestChooseSurvivor(t *testing.T) {
	silent := survivorReport{name: "ec-pvc", what: "its claim data-ec-pvc exists"}
	cases := []struct {
		name        string
		requested   string
		reports     []survivorReport
		noLocation  bool
		want        string // the survivor chosen, or ""
		refusedWith string // a part of the refusal
	}{
		{name: "the only survivor", reports: []survivorReport{answering("a", 10, 5)}, want: "a"},
		{name: "highest raft index wins over a higher revision",
			reports: []survivorReport{answering("a", 10, 9), answering("b", 11, 5)}, want: "b"},
		{name: "revision breaks a tie of raft index",
			reports: []survivorReport{answering("a", 10, 5), answering("b", 10, 6)}, want: "b"},
		{name: "name breaks a full tie, so two passes agree",
			reports: []survivorReport{answering("b", 10, 5), answering("a", 10, 5)}, want: "a"},
		{name: "auto chooses like the policy", requested: v1alpha1.RecoverFromSurvivorAuto,
			reports: []survivorReport{answering("a", 10, 5), answering("b", 12, 5)}, want: "b"},
		{name: "auto- and a suffix chooses too (a later ask needs a new value)", requested: "auto-2",
			reports: []survivorReport{answering("a", 10, 5), answering("b", 12, 5)}, want: "b"},
		{name: "a member named auto-... is taken by name", requested: "auto-x1",
			reports: []survivorReport{answering("auto-x1", 10, 5), answering("auto-x2", 12, 5)}, want: "auto-x1"},
		{name: "a person may choose an older survivor", requested: "a",
			reports: []survivorReport{answering("a", 10, 5), answering("b", 12, 5)}, want: "a"},
		{name: "a member that may come back with data refuses",
			reports:     []survivorReport{answering("a", 10, 5), silent},
			refusedWith: "ec-pvc (its claim data-ec-pvc exists) are not provably lost and do not answer"},
		{name: "a silent member refuses even when asked by name", requested: "a",
			reports: []survivorReport{answering("a", 10, 5), silent}, refusedWith: "may come back with data newer"},
		{name: "no survivor answers", reports: nil, refusedWith: "no surviving member answers"},
		{name: "the annotation names no answering survivor", requested: "ec-gone",
			reports: []survivorReport{answering("a", 10, 5)}, refusedWith: `names "ec-gone"`},
		{name: "nowhere to store the snapshot", noLocation: true,
			reports: []survivorReport{answering("a", 10, 5)}, refusedWith: "spec.backup.location is not set"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := chooseSurvivor(c.requested, c.reports, !c.noLocation)
			switch {
			case c.want != "":
				if d.survivor == nil || d.survivor.name != c.want || d.refused != "" {
					t.Fatalf("want survivor %s, got %+v", c.want, d)
				}
			default:
				if d.survivor != nil || !strings.Contains(d.refused, c.refusedWith) {
					t.Fatalf("want a refusal containing %q, got survivor %v, refusal %q", c.refusedWith, d.survivor, d.refused)
				}
			}
		})
	}
}
