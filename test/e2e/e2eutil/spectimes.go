package e2eutil

import (
	"fmt"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

// SpecTimesEnv names the file to which every e2e suite appends how long
// each of its nodes took (specs, BeforeSuite, AfterSuite), one line each:
// seconds, suite, node. Set it to see where an e2e run's time goes
// (sort -rn the file): the CI budget (DEVELOPERS.md) is spent spec by
// spec, and go test shows only a package's total.
const SpecTimesEnv = "E2E_SPEC_TIMES"

// WriteSpecTimes is a ReportAfterSuite body that appends the suite's node
// times to the file SpecTimesEnv names; without it, it does nothing.
// Appends of one short write each do not interleave between the suites'
// processes (O_APPEND).
func WriteSpecTimes(r Report) {
	path := os.Getenv(SpecTimesEnv)
	if path == "" {
		return
	}
	var b strings.Builder
	for _, s := range r.SpecReports {
		if s.State.Is(types.SpecStateSkipped|types.SpecStatePending) || s.RunTime == 0 {
			continue
		}
		fmt.Fprintf(&b, "%7.1f\t%s\t%s\n", s.RunTime.Round(100*time.Millisecond).Seconds(), r.SuiteDescription, oneLine(nodeName(s)))
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "spec times: %v\n", err)
		return
	}
	defer f.Close()
	if _, err := f.WriteString(b.String()); err != nil {
		fmt.Fprintf(os.Stderr, "spec times: %v\n", err)
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
