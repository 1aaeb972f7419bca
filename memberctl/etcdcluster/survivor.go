package etcdcluster

import (
	"fmt"
	"sort"
	"strings"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/memberctl/etcd"
)

// Recovery from a survivor after a lost majority: the pure decision.
//
// How: the chosen survivor's data is taken as a snapshot and restored
// into a new one-member cluster, which the others then join one at a time
// as learners, promoted as they catch up (the normal scale-up). It is not
// etcd's --force-new-cluster on the survivor's data dir: a memory
// member's data dir is a tmpfs that goes with its Pod, and a Pod's command
// cannot change without a new Pod, so the flag could never reach the data
// it is meant for; and etcd's own changelog records that before 3.6.17
// --force-new-cluster could break a member whose backend is ahead of its
// WAL. A snapshot is served by one member alone (no leader, no quorum),
// holds exactly what that member applied, and the restore path is the one
// total-loss restore and restore at bootstrap already use, with its
// sha256 check. So no etcd version needs to be refused for it.

// survivorReport is what is known of one member that is not provably
// lost while the majority is: its own Status answer, or none.
type survivorReport struct {
	name string
	// what may hold its data (its claim exists, its Pod runs, ...).
	what string
	// answered: status is its own answer.
	answered bool
	status   etcd.Status
}

// survivorDecision is the outcome of chooseSurvivor: a survivor, or the
// reason for refusing, which is a message for a person.
type survivorDecision struct {
	survivor *survivorReport
	refused  string
}

// chooseSurvivor picks the member to recover a lost majority from.
// requested is the annotation's value: a survivor's name, or "",
// RecoverFromSurvivorAuto or "auto-<anything>" to let it choose. hasLocation: the cluster has somewhere to put the
// survivor's snapshot (spec.backup.location).
//
// It refuses, changing nothing, when:
//   - a member that is not provably lost does not answer: it may come back
//     with data newer than any survivor's (a PVC member whose node is only
//     down), and recovering without it would drop what only it holds;
//   - no survivor answers;
//   - the annotation names a member that is not an answering survivor;
//   - there is nowhere to store the snapshot.
//
// Otherwise it picks the requested survivor, or the one with the highest
// raft index, then revision (then name, so that two passes agree).
func chooseSurvivor(requested string, reports []survivorReport, hasLocation bool) survivorDecision {
	var silent []string
	var answered []*survivorReport
	for i := range reports {
		r := &reports[i]
		if !r.answered {
			silent = append(silent, fmt.Sprintf("%s (%s)", r.name, r.what))
			continue
		}
		answered = append(answered, r)
	}
	switch {
	case len(silent) > 0:
		return survivorDecision{refused: fmt.Sprintf("member(s) %s are not provably lost and do not answer: they may "+
			"come back with data newer than any survivor's, which a recovery now would drop. Bring them back (quorum "+
			"may then return by itself), or make their loss certain (delete the Pod of a memory member, or the claim "+
			"of a PVC member whose volume is gone) and the recovery proceeds", strings.Join(silent, ", "))}
	case len(answered) == 0:
		return survivorDecision{refused: "no surviving member answers: there is no data to recover from"}
	case !hasLocation:
		return survivorDecision{refused: "spec.backup.location is not set: the survivor's snapshot needs somewhere " +
			"to be stored before any member is removed"}
	}
	for _, r := range answered {
		if r.name == requested {
			return survivorDecision{survivor: r}
		}
	}
	if requested != "" && requested != v1alpha1.RecoverFromSurvivorAuto && !strings.HasPrefix(requested, v1alpha1.RecoverFromSurvivorAuto+"-") {
		names := make([]string, len(answered))
		for i, r := range answered {
			names[i] = r.name
		}
		return survivorDecision{refused: fmt.Sprintf("annotation %s names %q, which is not a surviving member that "+
			"answers (those are: %s); set it to one of them or to %q", v1alpha1.AnnotationRecoverFromSurvivor,
			requested, strings.Join(names, ", "), v1alpha1.RecoverFromSurvivorAuto)}
	}
	sort.SliceStable(answered, func(i, j int) bool { return newerData(answered[i], answered[j]) })
	return survivorDecision{survivor: answered[0]}
}

// newerData orders survivors by how much of the log they hold: raft index
// first (it counts every committed entry, writes and membership changes
// alike), then keyspace revision, then name.
func newerData(a, b *survivorReport) bool {
	switch {
	case a.status.RaftIndex != b.status.RaftIndex:
		return a.status.RaftIndex > b.status.RaftIndex
	case a.status.Revision != b.status.Revision:
		return a.status.Revision > b.status.Revision
	default:
		return a.name < b.name
	}
}

// describeSurvivor names a survivor with what its data holds.
func describeSurvivor(r *survivorReport) string {
	return fmt.Sprintf("%s (raft index %d, revision %d)", r.name, r.status.RaftIndex, r.status.Revision)
}
