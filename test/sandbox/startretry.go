package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// liteStartAttempts is how often one lite apiserver's start is tried. At
// 100 clusters on 2 cores a start now and then misses its timeout while
// the ones before it still install CRDs (make bench-scale did not get
// past three of 101 such misses); a second try, after the others settled,
// starts it, and a third covers a rare second miss. A start that fails
// three times is a real fault, reported with every attempt's error.
const liteStartAttempts = 3

// loadScaled stretches a start timeout by the host's load: base on an
// idle machine, times the 1-minute load average per CPU when that is
// above 1 (a start is CPU-bound, so at load 20 on 2 cores it gets about a
// tenth of a core and takes ten times as long), at most maxStartStretch
// times base so that a hung start still fails.
func loadScaled(base time.Duration) time.Duration {
	per := hostLoad() / float64(runtime.NumCPU())
	return time.Duration(float64(base) * min(max(per, 1), maxStartStretch))
}

// maxStartStretch caps loadScaled: 90 s × 5 is 7.5 min, longer than any
// start seen at a load of 50 on 2 cores.
const maxStartStretch = 5

// hostLoad is the 1-minute load average (0 when unreadable).
func hostLoad() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _, _ := strings.Cut(string(b), " ")
	l, _ := strconv.ParseFloat(f, 64)
	return l
}

// retryStart runs start up to attempts times, until it succeeds, each
// attempt given the timeout loadScaled reads at its beginning; cleanup
// undoes a failed attempt (stops what it left running) before the next.
func retryStart(attempts int, base time.Duration, start func(timeout time.Duration) error, cleanup func()) error {
	var errs []error
	for i := range attempts {
		timeout := loadScaled(base)
		err := start(timeout)
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("attempt %d (timeout %s): %w", i+1, timeout.Round(time.Second), err))
		cleanup()
	}
	return errors.Join(errs...)
}
