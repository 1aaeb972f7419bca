package sandbox

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A start that misses its timeout is tried again after its leftovers are
// cleaned up, and only attempts failures in a row fail, naming each.
func TestRetryStart(t *testing.T) {
	var calls, cleanups int
	err := retryStart(3, time.Second, func(timeout time.Duration) error {
		calls++
		if timeout < time.Second {
			t.Fatalf("attempt %d got %s, less than the base", calls, timeout)
		}
		if calls < 3 {
			return errors.New("timeout waiting for process kube-apiserver to start")
		}
		return nil
	}, func() { cleanups++ })
	if err != nil || calls != 3 || cleanups != 2 {
		t.Fatalf("third attempt should start: err %v, calls %d, cleanups %d", err, calls, cleanups)
	}

	calls, cleanups = 0, 0
	err = retryStart(3, time.Second, func(time.Duration) error { calls++; return errors.New("port in use") }, func() { cleanups++ })
	if err == nil || calls != 3 || cleanups != 3 || strings.Count(err.Error(), "port in use") != 3 || !strings.Contains(err.Error(), "attempt 3") {
		t.Fatalf("three failures: err %v, calls %d, cleanups %d", err, calls, cleanups)
	}
}

// The start timeout never shrinks below its base and never grows past
// maxStartStretch times it, whatever the load.
func TestLoadScaledBounds(t *testing.T) {
	base := 90 * time.Second
	got := loadScaled(base)
	if got < base || got > maxStartStretch*base {
		t.Fatalf("loadScaled(%s) = %s at load %.1f: outside [base, %d × base]", base, got, hostLoad(), maxStartStretch)
	}
}
