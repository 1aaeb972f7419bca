package managerproc

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options configure Start.
type Options struct {
	// Name identifies the process in Engagements and in Log.
	Name string
	// Args are the binary's flags.
	Args []string
	// Log receives every line the process writes (stdout and stderr),
	// newline included; nil drops them.
	Log func(line string)
}

// Process is one etcdfleet-manager process.
type Process struct {
	Name string
	cmd  *exec.Cmd
	done chan struct{}
	log  func(string)
	rest string // an incomplete last line

	mu      sync.Mutex
	engaged map[string]bool // every cluster it ever engaged
	// since is when each cluster engaged now was engaged; spans are the
	// engagements that ended.
	since  map[string]time.Time
	spans  []Engagement
	grants []Grant
}

// Engagement is one cluster engaged by one process, as its log tells: it
// starts when "Cluster engaged" is read and ends when a "Cluster
// disengaged" line is (both logged after the fact), or when the process
// ends.
type Engagement struct {
	Process, Cluster string
	From, To         time.Time
}

// Grant is one destructive action the process's limiter let go.
type Grant struct {
	Cluster, Namespace, EtcdCluster, Member, Action string
	// At is when it was granted, Waited how long after its first ask.
	At     time.Time
	Waited time.Duration
}

var (
	engagedLine    = regexp.MustCompile(`"msg":"Cluster engaged".*"cluster":"([^"]+)"`)
	disengagedLine = regexp.MustCompile(`"msg":"Cluster disengaged[^"]*".*"cluster":"([^"]+)"`)
)

const grantMsg = `"msg":"Destructive action granted"`

// Build builds cmd/etcdfleet-manager into dir and returns its path.
func Build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "etcdfleet-manager")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/etcdfleet/etcdfleet/cmd/etcdfleet-manager").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %w: %s", err, out)
	}
	return bin, nil
}

// FreeLoopbackAddr returns a loopback address with a port free right now.
func FreeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// TimeEncodingArg makes the process stamp its log lines to the
// nanosecond (the default is RFC 3339 to the second), so Grants are
// timed by the process itself.
const TimeEncodingArg = "--zap-time-encoding=rfc3339nano"

// Start runs bin with opts.Args.
func Start(bin string, opts Options) (*Process, error) {
	p := &Process{Name: opts.Name, cmd: exec.Command(bin, opts.Args...), done: make(chan struct{}), log: opts.Log,
		engaged: map[string]bool{}, since: map[string]time.Time{}}
	if p.log == nil {
		p.log = func(string) {}
	}
	p.cmd.Stdout, p.cmd.Stderr = p, p
	// Dies with the test process, so no manager outlives a timed-out run.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	return p, nil
}

// PID is the process's ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Write takes the process's output: each line to Log, noting every
// engagement and grant. os/exec serializes the writes of stdout and
// stderr when both are the same writer.
func (p *Process) Write(b []byte) (int, error) {
	lines := strings.SplitAfter(p.rest+string(b), "\n")
	p.rest = lines[len(lines)-1]
	now := time.Now()
	for _, line := range lines[:len(lines)-1] {
		p.take(line, now)
		p.log(line)
	}
	return len(b), nil
}

func (p *Process) take(line string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if g := engagedLine.FindStringSubmatch(line); g != nil {
		p.engaged[g[1]] = true
		p.since[g[1]] = now
	}
	if g := disengagedLine.FindStringSubmatch(line); g != nil {
		p.endLocked(g[1], now)
	}
	if strings.Contains(line, grantMsg) {
		p.grants = append(p.grants, parseGrant(line, now))
	}
}

// parseGrant reads a grant line; at is the fallback time when the line's
// own stamp is not to the sub-second.
func parseGrant(line string, at time.Time) Grant {
	var l struct {
		TS                                              any
		Cluster, Namespace, EtcdCluster, Member, Action string
		WaitedSeconds                                   float64
	}
	_ = json.Unmarshal([]byte(line), &l)
	if s, ok := l.TS.(string); ok {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil && t.Nanosecond() != 0 {
			at = t
		}
	}
	return Grant{Cluster: l.Cluster, Namespace: l.Namespace, EtcdCluster: l.EtcdCluster, Member: l.Member, Action: l.Action,
		At: at, Waited: time.Duration(l.WaitedSeconds * float64(time.Second))}
}

// Ever returns how many clusters the process has engaged, now or before.
func (p *Process) Ever() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.engaged)
}

// Current returns the clusters the process has engaged now, sorted.
func (p *Process) Current() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.since))
	for c := range p.since {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// Engagements returns every engagement: ended ones, and those still on
// up to now.
func (p *Process) Engagements() []Engagement {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := append([]Engagement(nil), p.spans...)
	for c, from := range p.since {
		out = append(out, Engagement{Process: p.Name, Cluster: c, From: from, To: time.Now()})
	}
	return out
}

// Grants returns every grant logged so far.
func (p *Process) Grants() []Grant {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Grant(nil), p.grants...)
}

// endLocked closes cluster's current engagement, if any, at t.
func (p *Process) endLocked(cluster string, t time.Time) {
	if from, ok := p.since[cluster]; ok {
		p.spans = append(p.spans, Engagement{Process: p.Name, Cluster: cluster, From: from, To: t})
		delete(p.since, cluster)
	}
}

// Kill SIGKILLs the process: no lease release, no graceful shutdown.
func (p *Process) Kill() { p.end(syscall.SIGKILL) }

// Stop ends the process gracefully (SIGTERM), as a scale-down does.
func (p *Process) Stop() { p.end(syscall.SIGTERM) }

// end signals the process, waits for it to exit, and ends its
// engagements. Calling it again does nothing more.
func (p *Process) end(sig syscall.Signal) {
	_ = p.cmd.Process.Signal(sig)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.since {
		p.endLocked(c, time.Now())
	}
}
