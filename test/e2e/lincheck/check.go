package lincheck

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// DefaultCheckTimeout bounds porcupine's search. A search that runs out of
// time is inconclusive and fails the check: a check that passes because
// it gave up would prove nothing.
const DefaultCheckTimeout = 2 * time.Minute

// Result is the verdict on one history.
type Result struct {
	History History
	// Problems are the violations found, each naming the operations
	// involved; empty when the history is linearizable.
	Problems []string
	// Visualization is the path of porcupine's HTML rendering of the
	// history, written when porcupine found it not linearizable.
	Visualization string
}

// Err is nil for a linearizable history, else an error listing the
// problems and where the visualization is.
func (r Result) Err() error {
	if len(r.Problems) == 0 {
		return nil
	}
	msg := fmt.Sprintf("history of %s (%s) is not linearizable:\n%s", r.History.Name, r.Summary(), strings.Join(r.Problems, "\n"))
	if r.Visualization != "" {
		msg += "\nporcupine visualization: " + r.Visualization
	}
	return errors.New(msg)
}

// Summary counts the operations by outcome and the write gap, for logs.
func (r Result) Summary() string {
	c := r.History.Count()
	gap, _ := r.History.WriteGaps()
	return fmt.Sprintf("%d ops: %d ok, %d failed reads, %d unknown writes; longest gap between writes %s",
		len(r.History.Ops), c[OK], c[Failed], c[Unknown], gap.Round(time.Millisecond))
}

// Check checks a history: porcupine on the per-key model, then the
// revision rules. On a porcupine violation it writes the visualization
// into dir (os.TempDir() if empty).
func Check(h History, dir string, timeout time.Duration) Result {
	r := Result{History: h, Problems: checkRevisions(h.Ops)}
	ops := toPorcupine(h.Ops)
	verdict, info := porcupine.CheckOperationsVerbose(model, ops, timeout)
	switch verdict {
	case porcupine.Unknown:
		r.Problems = append(r.Problems, fmt.Sprintf("porcupine did not finish within %s: inconclusive", timeout))
	case porcupine.Illegal:
		r.Problems = append(r.Problems, offending(h.Ops, partitionByKey(ops), info)...)
		path, err := visualize(h.Name, dir, info)
		if err != nil {
			r.Problems = append(r.Problems, "writing the visualization: "+err.Error())
		}
		r.Visualization = path
	}
	return r
}

// toPorcupine converts the operations porcupine needs to see: failed reads
// are left out, an unknown write returns at the end of the history.
// Times are nanoseconds from the first call; Metadata is the index in ops.
func toPorcupine(ops []Op) []porcupine.Operation {
	if len(ops) == 0 {
		return nil
	}
	origin, end := ops[0].Call, ops[0].Call
	for _, o := range ops {
		origin = minTime(origin, o.Call)
		end = maxTime(end, maxTime(o.Call, o.Return))
	}
	var out []porcupine.Operation
	for i, o := range ops {
		if o.Output.Outcome == Failed {
			continue
		}
		ret := o.Return.Sub(origin).Nanoseconds()
		if o.Output.Outcome == Unknown {
			ret = end.Sub(origin).Nanoseconds() + 1
		}
		out = append(out, porcupine.Operation{ClientId: o.Client, Input: o.Input, Output: o.Output,
			Call: o.Call.Sub(origin).Nanoseconds(), Return: ret, Metadata: i})
	}
	return out
}

// offending describes each key whose history porcupine could not
// linearize: where its longest linearization ends, and the earliest calls
// it could not place after that.
func offending(ops []Op, partitions [][]porcupine.Operation, info porcupine.LinearizationInfo) []string {
	var out []string
	for p, partials := range info.PartialLinearizationsOperations() {
		var longest []porcupine.Operation
		for _, l := range partials {
			if len(l) > len(longest) {
				longest = l
			}
		}
		if len(longest) == len(partitions[p]) {
			continue
		}
		placed := map[int]bool{}
		for _, o := range longest {
			placed[o.Metadata.(int)] = true
		}
		var rest []Op
		for _, o := range partitions[p] {
			if i := o.Metadata.(int); !placed[i] {
				rest = append(rest, ops[i])
			}
		}
		slices.SortStableFunc(rest, func(a, b Op) int { return a.Call.Compare(b.Call) })
		msg := fmt.Sprintf("key %s: %d of %d operations linearize", partitions[p][0].Input.(Input).Key, len(longest), len(partitions[p]))
		var tail []Op
		for _, o := range longest[max(0, len(longest)-3):] {
			tail = append(tail, ops[o.Metadata.(int)])
		}
		msg += "; the linearization ends with:" + listOps(tail)
		msg += "\n  and cannot go on with any of the first unplaced calls:" + listOps(rest[:min(3, len(rest))])
		out = append(out, msg)
	}
	return out
}

// listOps renders ops one per line.
func listOps(ops []Op) string {
	var b strings.Builder
	for _, o := range ops {
		b.WriteString("\n    " + o.String())
	}
	return b.String()
}

var unsafeInName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func visualize(name, dir string, info porcupine.LinearizationInfo) (string, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, "lincheck-"+unsafeInName.ReplaceAllString(name, "_")+"-*.html")
	if err != nil {
		return "", err
	}
	defer f.Close()
	return f.Name(), porcupine.Visualize(model, info, f)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
