package e2eutil

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// RunSuite runs a package's e2e specs as every e2e suite does: Gomega's
// failures fail the spec, and why each failed spec failed is printed once
// more after the suite (PrintFailures), and each node's time goes to the
// file SpecTimesEnv names (WriteSpecTimes), so that no suite forgets them. Call
// it as the package's one Test function:
//
//	func TestFaults(t *testing.T) { e2eutil.RunSuite(t, "node faults e2e Suite") }
func RunSuite(t *testing.T, description string) {
	RegisterFailHandler(Fail)
	// A suite node is registered before RunSpecs builds the tree, as a
	// top-level `var _ = ReportAfterSuite(...)` would be.
	ReportAfterSuite("failures, last", PrintFailures)
	ReportAfterSuite("spec times", WriteSpecTimes)
	RunSpecs(t, description)
}
