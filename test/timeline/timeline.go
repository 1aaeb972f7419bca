package timeline

import (
	"time"
)

// State is what a member waits for during a heal; each is one colour.
type State int

const (
	// Terminal: its old Pod is Succeeded or Failed and nothing has asked
	// to replace it yet (the operator has not noticed, or cannot act).
	Terminal State = iota
	// Waiting: the replacement asked the fleet's limiter and waits for
	// its token.
	Waiting
	// Replacing: granted (or, without a grant log, the old Pod deleted);
	// the new Pod is being created and etcd started.
	Replacing
	// Ready: the new Pod is Ready.
	Ready
)

// States lists every State in legend order.
var States = []State{Terminal, Waiting, Replacing, Ready}

func (s State) String() string {
	return [...]string{"terminal", "waiting for the limiter", "replacing", "Ready"}[s]
}

// Color is the state's fill: the Okabe-Ito palette, which colour-blind
// readers tell apart too.
func (s State) Color() string {
	return [...]string{"#D55E00", "#E69F00", "#56B4E9", "#009E73"}[s]
}

// Member is one member's way through a heal. A zero time is a milestone
// not seen.
type Member struct {
	Name string
	// Terminal: its old Pod first seen Succeeded or Failed.
	Terminal time.Time
	// Asked: the replacement's first ask of the limiter (the grant's time
	// less its wait, from the manager's grant log).
	Asked time.Time
	// Granted: the limiter's grant (grant log).
	Granted time.Time
	// Deleted: the old Pod's DELETED event; it starts Replacing when no
	// grant was logged.
	Deleted time.Time
	// Ready: the new Pod first seen Ready.
	Ready time.Time
}

// Row is one EtcdCluster.
type Row struct {
	Name    string
	Members []Member
	// Healed is when the cluster was healthy again; zero: the last
	// member's Ready, if every member has one.
	Healed time.Time
}

// Timeline is one heal to draw.
type Timeline struct {
	Title string
	// Origin is 0 s on the axis; AxisLabel says what it is.
	Origin    time.Time
	AxisLabel string
	// End is the right edge; zero: a little after the last milestone.
	End  time.Time
	Rows []Row
	// Bound is the limiter's lower bound on the heal, counted from Origin;
	// zero draws no line.
	Bound time.Duration
}

// Span is one coloured stretch of a member's lane, in seconds from the
// origin.
type Span struct {
	State    State
	From, To float64
}

// Spans turns a member's milestones into its coloured spans, up to end
// (seconds from origin). Before its first milestone a lane is blank (the
// Pod still running or stopping); a member with no milestone at all never
// went down and is Ready throughout.
func Spans(m Member, origin time.Time, end float64) []Span {
	sec := func(t time.Time) float64 { return t.Sub(origin).Seconds() }
	type mark struct {
		s  State
		at time.Time
	}
	marks := []mark{{Terminal, m.Terminal}, {Waiting, m.Asked}, {Replacing, m.Granted}, {Replacing, m.Deleted}, {Ready, m.Ready}}
	var out []Span
	for _, k := range marks {
		if k.at.IsZero() {
			continue
		}
		at := min(sec(k.at), end)
		if n := len(out); n > 0 {
			if out[n-1].State == k.s {
				continue // Deleted after Granted: still replacing
			}
			if at < out[n-1].From { // out of order (clock skew): keep order
				at = out[n-1].From
			}
			out[n-1].To = at
		}
		out = append(out, Span{State: k.s, From: at, To: end})
	}
	if len(out) == 0 {
		return []Span{{State: Ready, From: 0, To: end}}
	}
	// Drop spans of no width (a grant with no wait: asked == granted).
	kept := out[:0]
	for _, s := range out {
		if s.To > s.From {
			kept = append(kept, s)
		}
	}
	return kept
}

// healed is the row's Healed, or its last Ready when every member has one.
func (r Row) healed() time.Time {
	if !r.Healed.IsZero() {
		return r.Healed
	}
	var last time.Time
	for _, m := range r.Members {
		if m.Ready.IsZero() {
			return time.Time{}
		}
		if m.Ready.After(last) {
			last = m.Ready
		}
	}
	return last
}

// end is the right edge in seconds: End, or 10 % (at least 1 s) past the
// last milestone, the bound and every row's heal.
func (t Timeline) end() float64 {
	if !t.End.IsZero() {
		return t.End.Sub(t.Origin).Seconds()
	}
	last := t.Bound.Seconds()
	for _, r := range t.Rows {
		for _, m := range r.Members {
			for _, at := range []time.Time{m.Terminal, m.Asked, m.Granted, m.Deleted, m.Ready} {
				if !at.IsZero() {
					last = max(last, at.Sub(t.Origin).Seconds())
				}
			}
		}
		if h := r.healed(); !h.IsZero() {
			last = max(last, h.Sub(t.Origin).Seconds())
		}
	}
	return last + max(1, last/10)
}

// LimiterBound is the lower bound the fleet-wide limiter allows on a heal
// of n replacements with full buckets: the first burst go at once, the
// others at rate, and the last one replaced still has to start etcd.
func LimiterBound(n, burst int, rate float64, etcdStart time.Duration) time.Duration {
	paced := max(0, n-burst)
	return time.Duration(float64(paced)/rate*float64(time.Second)) + etcdStart
}
