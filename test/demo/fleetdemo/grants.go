package fleetdemo

import (
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// grantMsg is the message the manager logs for every grant of its limiter
// (fleet/app logGrant): the only place a grant's time and wait are told.
const grantMsg = "Destructive action granted"

// Grant is one destructive action the manager's limiter let go.
type Grant struct {
	Cluster, Member string
	// At is when it was granted, Waited how long after its first ask.
	At     time.Time
	Waited time.Duration
}

// GrantLog collects the grants the in-process manager logs, for the heal
// picture's "waiting for the limiter" spans. Install it in the logger
// before Run (Sink), and pass it in Options.Grants.
type GrantLog struct {
	mu     sync.Mutex
	grants []Grant
}

// Grants returns what was collected so far.
func (g *GrantLog) Grants() []Grant {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Grant(nil), g.grants...)
}

// Sink wraps base: every record still goes to base (when base is enabled
// for it), and grant records are collected on the way.
func (g *GrantLog) Sink(base logr.LogSink) logr.LogSink { return grantSink{base: base, log: g} }

type grantSink struct {
	base logr.LogSink
	log  *GrantLog
	kv   []any
}

func (s grantSink) Init(info logr.RuntimeInfo) { s.base.Init(info) }

// Enabled is true at Info level whatever base says: grants are Info lines,
// and the demo's quiet logger discards them.
func (s grantSink) Enabled(level int) bool { return level == 0 || s.base.Enabled(level) }

func (s grantSink) Info(level int, msg string, kv ...any) {
	if msg == grantMsg {
		s.log.add(append(append([]any(nil), s.kv...), kv...))
	}
	if s.base.Enabled(level) {
		s.base.Info(level, msg, kv...)
	}
}

func (s grantSink) Error(err error, msg string, kv ...any) { s.base.Error(err, msg, kv...) }

func (s grantSink) WithValues(kv ...any) logr.LogSink {
	return grantSink{base: s.base.WithValues(kv...), log: s.log, kv: append(append([]any(nil), s.kv...), kv...)}
}

func (s grantSink) WithName(name string) logr.LogSink {
	return grantSink{base: s.base.WithName(name), log: s.log, kv: s.kv}
}

func (g *GrantLog) add(kv []any) {
	gr := Grant{At: time.Now()}
	for i := 0; i+1 < len(kv); i += 2 {
		switch k, _ := kv[i].(string); k {
		case "cluster":
			gr.Cluster, _ = kv[i+1].(string)
		case "member":
			gr.Member, _ = kv[i+1].(string)
		case "waitedSeconds":
			if f, ok := kv[i+1].(float64); ok {
				gr.Waited = time.Duration(f * float64(time.Second))
			}
		}
	}
	g.mu.Lock()
	g.grants = append(g.grants, gr)
	g.mu.Unlock()
}
