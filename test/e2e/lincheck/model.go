package lincheck

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// keyState is the model's state of one key. It is a comparable value, so
// porcupine's default equality (==) works and states can be cached.
type keyState struct {
	Exists bool
	Value  string
	// Rev is the revision of the key's last write (its mod revision while
	// it exists, its delete's revision once deleted). When RevUnknown, the
	// last write's outcome was unknown, so its revision is only known to be
	// greater than Rev.
	Rev        int64
	RevUnknown bool
}

// modRev is the mod revision a compare sees: 0 for an absent key.
func (s keyState) modRev() int64 {
	if !s.Exists {
		return 0
	}
	return s.Rev
}

// model is etcd's KV for one key: a history partitions by key, because
// every operation of the workload touches one key (linearizability is
// local, so the whole history is linearizable if each key's is).
// Revisions are shared by all keys; what partitioning loses of them is
// checked by checkRevisions.
var model = porcupine.Model{
	Partition: partitionByKey,
	Init:      func() any { return keyState{} },
	Step: func(state, input, output any) (bool, any) {
		return step(state.(keyState), input.(Input), output.(Output))
	},
	DescribeOperation: func(input, output any) string { return describe(input.(Input), output.(Output)) },
	DescribeState: func(state any) string {
		s := state.(keyState)
		rev := fmt.Sprintf("@%d", s.Rev)
		if s.RevUnknown {
			rev = fmt.Sprintf("@>%d", s.Rev)
		}
		if !s.Exists {
			return "absent" + rev
		}
		return fmt.Sprintf("%q%s", s.Value, rev)
	},
}

func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	index := map[string]int{}
	var out [][]porcupine.Operation
	for _, op := range history {
		k := op.Input.(Input).Key
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], op)
	}
	return out
}

// step applies one operation to a key's state, saying whether the output
// is one etcd could have given in that state.
func step(s keyState, in Input, out Output) (bool, keyState) {
	if out.Outcome == Unknown {
		return true, stepUnknown(s, in)
	}
	switch in.Kind {
	case Get:
		return observe(s, out.Found, out.Value, out.ModRev)
	case Put:
		return wrote(s, true, in.Value, out.Revision)
	case Delete:
		if out.Deleted == 0 {
			return !s.Exists, s
		}
		if !s.Exists {
			return false, s
		}
		return wrote(s, false, "", out.Revision)
	case CAS:
		if out.Succeeded {
			if !s.Exists && in.ExpectRev != 0 || s.Exists && !s.RevUnknown && s.Rev != in.ExpectRev ||
				s.Exists && s.RevUnknown && in.ExpectRev <= s.Rev {
				return false, s
			}
			return wrote(s, true, in.Value, out.Revision)
		}
		ok, next := observe(s, out.Found, out.Value, out.ModRev)
		return ok && next.modRev() != in.ExpectRev, next
	}
	return false, s
}

// stepUnknown is an unknown write taking effect here. That it may not
// have taken effect at all needs no branch: porcupine may place it after
// every other operation (its return is the end of the history), where its
// effect is seen by nobody.
func stepUnknown(s keyState, in Input) keyState {
	switch in.Kind {
	case Put:
		return keyState{Exists: true, Value: in.Value, Rev: s.Rev, RevUnknown: true}
	case Delete:
		if s.Exists {
			return keyState{Rev: s.Rev, RevUnknown: true}
		}
	case CAS:
		if couldMatch(s, in.ExpectRev) {
			return keyState{Exists: true, Value: in.Value, Rev: s.Rev, RevUnknown: true}
		}
	}
	return s
}

// couldMatch says whether a compare against expect could succeed.
func couldMatch(s keyState, expect int64) bool {
	if s.Exists && s.RevUnknown {
		return expect > s.Rev
	}
	return s.modRev() == expect
}

// wrote checks a write acknowledged at revision rev: it must come after
// the key's last write, and it becomes the key's state.
func wrote(s keyState, exists bool, value string, rev int64) (bool, keyState) {
	if rev <= s.Rev {
		return false, s
	}
	return true, keyState{Exists: exists, Value: value, Rev: rev}
}

// observe checks a read of the key; a read pins an unknown revision.
func observe(s keyState, found bool, value string, modRev int64) (bool, keyState) {
	if found != s.Exists {
		return false, s
	}
	if !found {
		return true, s
	}
	if value != s.Value {
		return false, s
	}
	if s.RevUnknown {
		return modRev > s.Rev, keyState{Exists: true, Value: value, Rev: modRev}
	}
	return modRev == s.Rev, s
}

// describe renders one operation as "put(k, v) -> ok@12".
func describe(in Input, out Output) string {
	var call string
	switch in.Kind {
	case Get, Delete:
		call = fmt.Sprintf("%s(%s)", in.Kind, in.Key)
	case Put:
		call = fmt.Sprintf("put(%s, %s)", in.Key, in.Value)
	case CAS:
		call = fmt.Sprintf("cas(%s, @%d, %s)", in.Key, in.ExpectRev, in.Value)
	}
	if out.Outcome != OK {
		return fmt.Sprintf("%s -> %s (%s)", call, out.Outcome, out.Err)
	}
	read := "absent"
	if out.Found {
		read = fmt.Sprintf("%q@%d", out.Value, out.ModRev)
	}
	switch {
	case in.Kind == Get, in.Kind == CAS && !out.Succeeded:
		return fmt.Sprintf("%s -> %s (rev %d)", call, read, out.Revision)
	case in.Kind == Delete:
		return fmt.Sprintf("%s -> deleted %d (rev %d)", call, out.Deleted, out.Revision)
	}
	return fmt.Sprintf("%s -> ok (rev %d)", call, out.Revision)
}
