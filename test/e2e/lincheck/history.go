package lincheck

import (
	"fmt"
	"slices"
	"time"
)

// Kind is the kind of one client operation.
type Kind int

const (
	// Get reads one key (a linearizable range read).
	Get Kind = iota
	// Put writes one key.
	Put
	// Delete deletes one key.
	Delete
	// CAS is a Txn: if the key's mod revision is ExpectRev (0: the key is
	// absent) then put Value, else read the key.
	CAS
)

func (k Kind) String() string {
	return [...]string{"get", "put", "delete", "cas"}[k]
}

// Outcome says what the client learned about an operation.
type Outcome int

const (
	// OK: the operation returned a response.
	OK Outcome = iota
	// Failed: the operation certainly did not take effect. Only reads
	// fail; the checker drops them, as a read that returned nothing
	// constrains nothing.
	Failed
	// Unknown: a write whose response never came (timeout, connection lost
	// after send). It may or may not have taken effect, at any time after
	// its call.
	Unknown
)

func (o Outcome) String() string {
	return [...]string{"ok", "failed", "unknown"}[o]
}

// Input is what a client asked for.
type Input struct {
	Kind  Kind
	Key   string
	Value string // Put and CAS; unique in the history
	// ExpectRev is the mod revision a CAS compares against; 0 means the key
	// does not exist.
	ExpectRev int64
}

// Output is what the client got back.
type Output struct {
	Outcome Outcome
	// Revision is the response header's revision: the store's revision when
	// the request was served (for a write that changed the key, its new mod
	// revision).
	Revision int64
	// Found, Value and ModRev are the key as read by a Get, or by the else
	// branch of a CAS that did not succeed.
	Found  bool
	Value  string
	ModRev int64
	// Succeeded says whether a CAS took its then branch.
	Succeeded bool
	// Deleted is how many keys a Delete removed (0 or 1).
	Deleted int64
	// Err is the client error for a Failed or Unknown operation.
	Err string
}

// Op is one recorded operation: who called it, when, what it asked and
// what it got.
type Op struct {
	Client int
	Input  Input
	Output Output
	Call   time.Time
	// Return is when the response (or the error) came; for an Unknown
	// operation the checker treats it as the end of the history.
	Return time.Time
}

// changesKey says whether an OK operation wrote a new revision of its key.
func (o Op) changesKey() bool {
	if o.Output.Outcome != OK {
		return false
	}
	switch o.Input.Kind {
	case Put:
		return true
	case Delete:
		return o.Output.Deleted > 0
	case CAS:
		return o.Output.Succeeded
	}
	return false
}

// String describes the operation for a failure message.
func (o Op) String() string {
	return fmt.Sprintf("client %d %s [%s .. %s]", o.Client, describe(o.Input, o.Output),
		o.Call.Format("15:04:05.000"), o.Return.Format("15:04:05.000"))
}

// History is every operation of one workload run, in call order.
type History struct {
	// Name says which cluster the history is of, for messages and files.
	Name string
	Ops  []Op
}

// WriteGaps returns the longest time between two successive successful
// writes, and the number of successful writes: what a writing client of
// the cluster saw as unavailability.
func (h History) WriteGaps() (longest time.Duration, writes int) {
	var last time.Time
	for _, t := range h.writeReturns() {
		if !last.IsZero() && t.Sub(last) > longest {
			longest = t.Sub(last)
		}
		last = t
		writes++
	}
	return longest, writes
}

// Count returns how many operations had each outcome.
func (h History) Count() map[Outcome]int {
	out := map[Outcome]int{}
	for _, o := range h.Ops {
		out[o.Output.Outcome]++
	}
	return out
}

// writeReturns returns, in order, when each write that got a response
// returned (a CAS whose compare failed went through consensus too).
func (h History) writeReturns() []time.Time {
	var out []time.Time
	for _, o := range h.Ops {
		if o.Input.Kind != Get && o.Output.Outcome == OK {
			out = append(out, o.Return)
		}
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}
