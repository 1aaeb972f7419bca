package e2eutil

import (
	"fmt"
	"os"

	. "github.com/onsi/ginkgo/v2"
)

// failureMessageMax keeps one failure's message to a screen: an Eventually
// that timed out can carry a whole object dump.
const failureMessageMax = 3000

// PrintFailures is a ReportAfterSuite body that prints each failed spec's
// failure message and location once more, last. CI shows the end of a
// failing package's output, where Ginkgo's own summary names the failed
// specs but not why they failed; the message itself is far above, inside
// the spec's timeline. RunSuite registers it for every e2e suite.
func PrintFailures(r Report) {
	for _, s := range r.SpecReports {
		if !s.Failed() {
			continue
		}
		msg := s.Failure.Message
		if len(msg) > failureMessageMax {
			msg = msg[:failureMessageMax] + " […]"
		}
		name := nodeName(s)
		// Stdout, not GinkgoWriter: a report node's GinkgoWriter output is
		// shown only when the node itself fails.
		fmt.Fprintf(os.Stdout, "\nFAILED: %s\n  at %s (%s)\n  %s\n", name, s.Failure.Location, s.Failure.FailureNodeType, msg)
	}
}

// nodeName is a spec's full text, or for a suite node (BeforeSuite, a
// DeferCleanup), which has none, its node type.
func nodeName(s SpecReport) string {
	if name := s.FullText(); name != "" {
		return name
	}
	return s.LeafNodeType.String()
}
