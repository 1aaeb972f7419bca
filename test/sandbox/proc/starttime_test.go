package proc

import (
	"os"
	"os/exec"
	"testing"
)

// StartTime tells a process from a later one with the same number: this
// process has one, a child started after it has a later or equal one, and
// an exited pid has none.
func TestStartTime(t *testing.T) {
	self, ok := StartTime(os.Getpid())
	if !ok || self == 0 {
		t.Fatalf("StartTime(self) = %d, %v", self, ok)
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no true binary:", err)
	}
	if _, ok := StartTime(cmd.Process.Pid); ok {
		t.Errorf("an exited, reaped pid %d has a start time", cmd.Process.Pid)
	}
}
