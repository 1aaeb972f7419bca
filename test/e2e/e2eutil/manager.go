package e2eutil

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"runtime/pprof"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
)

// stopWait is how long stop waits for a fleet manager to exit: its own
// graceful shutdown (controller-runtime's default, 30 s) plus slack.
const stopWait = time.Minute

// stackDumpAfter is when a stop that has not returned yet dumps every
// goroutine's stack to GinkgoWriter: a runnable that ignores its context
// is otherwise invisible, and by the time the graceful shutdown gives up
// (30 s) the stuck goroutine is the one still there.
const stackDumpAfter = 20 * time.Second

// RunFleetManager runs fm in the test process until the returned stop
// func is called. stop cancels it and expects it to exit cleanly. When it
// does not, the failure message itself names where the manager's goroutines
// wait (StuckGoroutines): CI shows failure messages, not the whole output.
func RunFleetManager(fm interface{ Start(context.Context) error }) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fm.Start(ctx) }()
	return func() {
		GinkgoHelper()
		cancel()
		dump := time.AfterFunc(stackDumpAfter, func() {
			GinkgoWriter.Printf("fleet manager still stopping after %s; every goroutine:\n%s\n", stackDumpAfter, goroutines())
		})
		defer dump.Stop()
		var err error
		select {
		case err = <-done:
		case <-time.After(stopWait):
			err = fmt.Errorf("still running after %s", stopWait)
		}
		if err != nil {
			Fail(fmt.Sprintf("the fleet manager did not exit cleanly once cancelled (%v); goroutines still waiting:\n%s",
				err, StuckGoroutines(goroutines())))
		}
	}
}

func goroutines() string {
	var b bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
	return b.String()
}

// frameFunc matches a stack's function lines (the file lines are indented
// with a tab).
var frameFunc = regexp.MustCompile(`(?m)^([^\t\n][^\n]*)\(`)

// stuckFrames are the packages whose goroutines can hold a manager up:
// etcdfleet's own outside test/ (the sandbox's and the tests' goroutines
// are not the manager's), and controller-runtime's and
// multicluster-runtime's but for envtest's process handling.
var stuckFrames = regexp.MustCompile(`^(github\.com/etcdfleet/etcdfleet/|sigs\.k8s\.io/(controller|multicluster)-runtime/)`)

const (
	testFrames       = "github.com/etcdfleet/etcdfleet/test/"
	envtestFrames    = "sigs.k8s.io/controller-runtime/pkg/internal/testing/"
	maxStuckReported = 8
)

// StuckGoroutines summarises a debug=2 goroutine dump, a line each: for
// each goroutine with a frame of stuckFrames (and none of the tests'), its
// innermost frame (what it waits on) and its innermost stuckFrames frame,
// counted, most frequent first, at most maxStuckReported of them.
func StuckGoroutines(dump string) string {
	counts := map[string]int{}
	for _, g := range strings.Split(dump, "\n\n") {
		if strings.Contains(g, testFrames) || strings.Contains(g, envtestFrames) {
			continue
		}
		var inner, ours string
		for _, m := range frameFunc.FindAllStringSubmatch(g, -1) {
			fn := m[1]
			if strings.HasPrefix(fn, "goroutine ") || strings.HasPrefix(fn, "created by ") {
				continue
			}
			if inner == "" {
				inner = fn
			}
			if stuckFrames.MatchString(fn) {
				ours = fn
				break
			}
		}
		if ours != "" {
			counts[inner+" in "+ours]++
		}
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	if len(keys) > maxStuckReported {
		keys = keys[:maxStuckReported]
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d× %s", counts[k], k)
	}
	return strings.Join(parts, "\n")
}
