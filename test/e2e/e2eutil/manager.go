package e2eutil

import (
	"bytes"
	"context"
	"runtime/pprof"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
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
// func is called. stop cancels it and expects it to exit cleanly.
func RunFleetManager(fm interface{ Start(context.Context) error }) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fm.Start(ctx) }()
	return func() {
		GinkgoHelper()
		cancel()
		dump := time.AfterFunc(stackDumpAfter, func() {
			var b bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
			GinkgoWriter.Printf("fleet manager still stopping after %s; every goroutine:\n%s\n", stackDumpAfter, b.String())
		})
		defer dump.Stop()
		Eventually(done).WithTimeout(stopWait).Should(Receive(BeNil()), "the fleet manager exits cleanly once cancelled")
	}
}
