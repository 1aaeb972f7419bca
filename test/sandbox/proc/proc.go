package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is one running child.
type Process struct {
	Cmd  *exec.Cmd
	done chan struct{}
	err  error
}

type startReq struct {
	cmd   *exec.Cmd
	reply chan error
}

var (
	startOnce sync.Once
	starts    chan startReq

	liveMu sync.Mutex
	live   = map[*Process]struct{}{}
)

// forker runs on a locked OS thread that never exits, so Pdeathsig stays armed.
func forker() {
	runtime.LockOSThread()
	for r := range starts {
		r.reply <- r.cmd.Start()
	}
}

// Start starts cmd as a tracked child that dies with this process.
func Start(cmd *exec.Cmd) (*Process, error) {
	startOnce.Do(func() {
		starts = make(chan startReq)
		go forker()
	})
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.SysProcAttr.Setpgid = true
	reply := make(chan error, 1)
	starts <- startReq{cmd: cmd, reply: reply}
	if err := <-reply; err != nil {
		return nil, err
	}
	p := &Process{Cmd: cmd, done: make(chan struct{})}
	liveMu.Lock()
	live[p] = struct{}{}
	liveMu.Unlock()
	go func() {
		p.err = cmd.Wait()
		liveMu.Lock()
		delete(live, p)
		liveMu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the exit error; valid after Done.
func (p *Process) Err() error { return p.err }

// ExitCode is the exit code (128+signal when killed); valid after Done.
func (p *Process) ExitCode() int32 {
	var ee *exec.ExitError
	if !errors.As(p.err, &ee) {
		if p.err == nil {
			return 0
		}
		return 1
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int32(ws.Signal())
	}
	return int32(ee.ExitCode())
}

// Signal sends sig to the process group.
func (p *Process) Signal(sig syscall.Signal) {
	_ = syscall.Kill(-p.Cmd.Process.Pid, sig)
}

// Stop sends SIGTERM, waits up to grace, then SIGKILLs. It returns after
// exit. A grace of 0 or less is SIGKILL alone: a SIGTERM sent first, even
// a moment before, could be handled (a power loss gives no signal at all).
func (p *Process) Stop(grace time.Duration) {
	if grace <= 0 {
		p.Signal(syscall.SIGKILL)
		<-p.done
		return
	}
	p.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	p.Signal(syscall.SIGKILL)
	<-p.done
}

// Live lists the PIDs of tracked children still running.
func Live() []int {
	liveMu.Lock()
	defer liveMu.Unlock()
	pids := make([]int, 0, len(live))
	for p := range live {
		pids = append(pids, p.Cmd.Process.Pid)
	}
	return pids
}

// KillAll SIGKILLs every tracked child and waits for them; a last resort for
// teardown paths that failed part way.
func KillAll() {
	liveMu.Lock()
	ps := make([]*Process, 0, len(live))
	for p := range live {
		ps = append(ps, p)
	}
	liveMu.Unlock()
	for _, p := range ps {
		p.Signal(syscall.SIGKILL)
		<-p.done
	}
}

// Running reports whether pid names a live process that is not a zombie.
func Running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	var state string
	if i < 0 {
		return false
	}
	if _, err := fmt.Sscanf(s[i+1:], " %s", &state); err != nil {
		return false
	}
	return state != "Z"
}

// Children lists the live (non-zombie) child processes of this process,
// whoever started them (envtest starts kube-apiserver and etcd itself).
func Children() []int {
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	var out []int
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// After the ")" closing the command name: state, then ppid.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		var state string
		var ppid int
		if i < 0 {
			continue
		}
		if _, err := fmt.Sscanf(s[i+1:], " %s %d", &state, &ppid); err != nil {
			continue
		}
		if ppid == self && state != "Z" {
			out = append(out, pid)
		}
	}
	return out
}

// StartTime is pid's start time in clock ticks since boot (field 22 of
// /proc/<pid>/stat), and false when pid does not exist. A pid with the same
// number and another start time is another process: the kernel reuses the
// numbers of processes that exited, and test packages run side by side.
func StartTime(pid int) (uint64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	// After the ")": state is field 3, start time field 22.
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return 0, false
	}
	var t uint64
	if _, err := fmt.Sscanf(fields[19], "%d", &t); err != nil {
		return 0, false
	}
	return t, true
}

// Cwd is pid's working directory, and "" when it cannot be read. The
// sandbox's kubelet runs each container in its Pod's directory, so the
// working directory tells which fleet a container process belongs to.
func Cwd(pid int) string {
	dir, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		return ""
	}
	return dir
}
