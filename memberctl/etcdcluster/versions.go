package etcdcluster

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/upgrade"
)

// Versions: what the members run, as each one reports it (EtcdMember
// status.version, read from etcd by the member controller), against
// spec.version. A change etcd allows is rolled into the running members one
// at a time (roll.go; a minor downgrade through etcd's downgrade API first,
// downgrade.go). So that a change etcd refuses never mixes versions,
// nothing is rolled and new members keep the running version while
// spec.version is a change etcd does not allow from it.

// versionState is what the running members report, judged once per pass.
type versionState struct {
	spec string
	// counts are the reported versions, oldest first.
	counts []v1alpha1.EtcdClusterVersionCount
	// unreported counts running members with no status.version yet.
	unreported int
	// refusals say why the change from each running version that is not
	// spec.version is not made; empty when every one is.
	refusals []error
	// join is the version new members take while a change is refused.
	join string
}

// observeVersions counts the versions the running members report and
// judges each against spec.version (memberctl/upgrade): with CheckMemory
// when the members keep their data in memory.
func observeVersions(running []*v1alpha1.EtcdMember, spec string, memory bool) versionState {
	check := upgrade.Check
	if memory {
		check = upgrade.CheckMemory
	}
	st := versionState{spec: spec}
	n := map[string]int32{}
	for _, m := range running {
		if m.Status.Version == "" {
			st.unreported++
			continue
		}
		n[m.Status.Version]++
	}
	var reported []string
	for v, c := range n {
		st.counts = append(st.counts, v1alpha1.EtcdClusterVersionCount{Version: v, Members: c})
		reported = append(reported, v)
	}
	sort.Slice(st.counts, func(i, j int) bool { return upgrade.Less(st.counts[i].Version, st.counts[j].Version) })
	for _, c := range st.counts {
		if c.Version == spec {
			continue // no change, whether or not etcdfleet still offers it
		}
		if _, err := check(c.Version, spec); err != nil {
			st.refusals = append(st.refusals, err)
		}
	}
	st.join = upgrade.JoinVersion(reported)
	return st
}

// blocked reports whether spec.version is a change etcd refuses from what runs.
func (s versionState) blocked() bool {
	return len(s.refusals) > 0
}

// forNewMembers is the version a member created now gets: the templated
// one (status.observed), or the running one while the change is refused.
// When no member reports a version etcd released there is none to keep.
func (s versionState) forNewMembers(templated string) string {
	if s.blocked() && s.join != "" {
		return s.join
	}
	return templated
}

// refusal is every refusal on one line: it becomes a condition message.
func (s versionState) refusal() string {
	parts := make([]string, len(s.refusals))
	for i, err := range s.refusals {
		parts[i] = err.Error()
	}
	msg := strings.Join(parts, "; ") + ". No member is changed"
	if s.join != "" {
		msg += ", and new members get etcd " + s.join + " until spec.version is a change etcd allows"
	}
	return msg
}

// running names what runs: "etcd 3.6.16", or "etcd 3.6.16 (2), 3.7.3 (1)".
func (s versionState) running() string {
	if len(s.counts) == 1 {
		return "etcd " + s.counts[0].Version
	}
	parts := make([]string, len(s.counts))
	for i, c := range s.counts {
		parts[i] = fmt.Sprintf("%s (%d)", c.Version, c.Members)
	}
	return "etcd " + strings.Join(parts, ", ")
}

// versionVerdicts computes VersionDrifted and UpgradeBlocked.
func versionVerdicts(s versionState) (drifted, blocked verdict) {
	if len(s.counts) == 0 {
		unknown := verdict{metav1.ConditionUnknown, v1alpha1.ReasonVersionsUnknown, "no running member has reported its etcd version yet"}
		return unknown, unknown
	}
	pending := ""
	if s.unreported > 0 {
		pending = fmt.Sprintf("; %d member(s) have not reported theirs yet", s.unreported)
	}
	if len(s.counts) == 1 && s.counts[0].Version == s.spec {
		msg := fmt.Sprintf("%d member(s) run %s, spec.version%s", s.counts[0].Members, s.running(), pending)
		return verdict{metav1.ConditionFalse, v1alpha1.ReasonVersionMatched, msg},
			verdict{metav1.ConditionFalse, v1alpha1.ReasonUpgradePathAllowed, "every member that reported runs spec.version " + s.spec}
	}
	drifted = verdict{metav1.ConditionTrue, v1alpha1.ReasonVersionMismatch,
		fmt.Sprintf("members run %s; spec.version is %s%s", s.running(), s.spec, pending)}
	if s.blocked() {
		return drifted, verdict{metav1.ConditionTrue, v1alpha1.ReasonUpgradePathRefused, s.refusal()}
	}
	return drifted, verdict{metav1.ConditionFalse, v1alpha1.ReasonUpgradePathAllowed,
		fmt.Sprintf("etcd allows %s from %s; the members are rolled to it one at a time, followers first, the leader last", s.spec, s.running())}
}

// setVersionStatus writes status.versions, VersionDrifted and
// UpgradeBlocked, with a Warning Event each time a change is refused anew.
func (p *pass) setVersionStatus() {
	st := &p.ec.Status
	st.Versions = p.versions.counts
	drifted, blocked := versionVerdicts(p.versions)
	prev := apimeta.FindStatusCondition(st.Conditions, v1alpha1.ConditionUpgradeBlocked)
	if blocked.status == metav1.ConditionTrue && (prev == nil || prev.Status != blocked.status || prev.Message != blocked.message) {
		p.event(corev1.EventTypeWarning, v1alpha1.ConditionUpgradeBlocked, "%s", blocked.message)
	}
	p.setCondition(v1alpha1.ConditionVersionDrifted, drifted.status, drifted.reason, drifted.message)
	p.setCondition(v1alpha1.ConditionUpgradeBlocked, blocked.status, blocked.reason, blocked.message)
}
