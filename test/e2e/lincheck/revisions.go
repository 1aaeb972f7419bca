package lincheck

import (
	"fmt"
	"slices"
	"time"
)

// checkRevisions checks what partitioning by key hides: etcd has one
// revision counter for all keys. It returns a description of each
// violation (at most one per rule):
//   - no two writes that changed a key got the same revision;
//   - revisions never go back in real time: an operation called after
//     another returned sees at least its revision, and a write that
//     changes a key gets a greater one.
func checkRevisions(ops []Op) []string {
	var problems []string
	if p := duplicateRevision(ops); p != "" {
		problems = append(problems, p)
	}
	if p := revisionWentBack(ops); p != "" {
		problems = append(problems, p)
	}
	return problems
}

func duplicateRevision(ops []Op) string {
	byRev := map[int64]Op{}
	for _, o := range ops {
		if !o.changesKey() {
			continue
		}
		if prev, ok := byRev[o.Output.Revision]; ok {
			return fmt.Sprintf("revision %d was given to two writes:\n  %s\n  %s", o.Output.Revision, prev, o)
		}
		byRev[o.Output.Revision] = o
	}
	return ""
}

// revisionWentBack sweeps the operations in call order, keeping the
// highest revision of those that returned before the current call.
func revisionWentBack(ops []Op) string {
	var done []Op
	for _, o := range ops {
		if o.Output.Outcome == OK {
			done = append(done, o)
		}
	}
	byCall := slices.Clone(done)
	slices.SortStableFunc(byCall, func(a, b Op) int { return a.Call.Compare(b.Call) })
	slices.SortStableFunc(done, func(a, b Op) int { return a.Return.Compare(b.Return) })
	var highest Op
	next := 0
	for _, o := range byCall {
		for next < len(done) && done[next].Return.Before(o.Call) {
			if done[next].Output.Revision > highest.Output.Revision {
				highest = done[next]
			}
			next++
		}
		floor := highest.Output.Revision
		if o.changesKey() {
			floor++
		}
		if o.Output.Revision < floor {
			return fmt.Sprintf("revision went back: %s\n  was called after %s had returned (%s earlier)",
				o, highest, o.Call.Sub(highest.Return).Round(time.Microsecond))
		}
	}
	return ""
}
