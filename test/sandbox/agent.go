package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
)

// agentPackage is the etcdfleet-agent command the simulated kubelet runs
// for containers whose image is etcdfleet's own.
const agentPackage = "github.com/etcdfleet/etcdfleet/cmd/etcdfleet-agent"

// The agent is built once per test process and shared by every Fleet in
// it; the last Stop removes it. The Go build cache makes a rebuild cheap.
var agent struct {
	sync.Mutex
	dir  string
	refs int
}

// acquireAgent returns the path of a freshly built etcdfleet-agent.
func acquireAgent() (string, error) {
	agent.Lock()
	defer agent.Unlock()
	if agent.dir == "" {
		dir, err := os.MkdirTemp("", "etcdfleet-agent-")
		if err != nil {
			return "", err
		}
		if err := buildAgent(filepath.Join(dir, "etcdfleet-agent")); err != nil {
			_ = os.RemoveAll(dir)
			return "", err
		}
		agent.dir = dir
	}
	agent.refs++
	return filepath.Join(agent.dir, "etcdfleet-agent"), nil
}

func releaseAgent() {
	agent.Lock()
	defer agent.Unlock()
	if agent.refs--; agent.refs == 0 {
		_ = os.RemoveAll(agent.dir)
		agent.dir = ""
	}
}

// buildAgent builds this checkout's etcdfleet-agent (the repo root is found
// from this file, so any test package's working directory will do).
func buildAgent(out string) error {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	// -tags sandbox: the agent resolves Kubernetes DNS names (sandboxdns).
	cmd := exec.Command("go", "build", "-tags", "sandbox", "-o", out, agentPackage)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("sandbox: build etcdfleet-agent: %v\n%s", err, b)
	}
	return nil
}
