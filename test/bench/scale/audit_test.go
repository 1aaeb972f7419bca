package scale

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

// auditRow is one kind of request seen at rest, per cluster per minute.
type auditRow struct {
	who, verb, path string
	perMin          float64
}

// auditBreakdown reads every workload cluster's audit log over [from, to)
// and returns its requests grouped by sender, verb and path, per cluster
// per minute, largest first, and how many of them were the manager's
// probes, in all. The bench's own /metrics scrapes are left out.
func auditBreakdown(b *testing.B, dir string, ws []*sandbox.LiteCluster, from, to time.Time) (rows []auditRow, probes int) {
	counts := map[auditRow]int{}
	for _, w := range ws {
		evs, err := sandbox.ReadAudit(sandbox.AuditLog(dir, w.Name), from, to)
		if err != nil {
			b.Fatalf("audit log of %s: %v", w.Name, err)
		}
		for _, e := range evs {
			path, _, _ := strings.Cut(e.RequestURI, "?")
			if path == "/metrics" {
				continue
			}
			counts[auditRow{who: sender(e), verb: e.Verb, path: objectNames.ReplaceAllString(path, "$1/*")}]++
		}
	}
	per := float64(len(ws)) * to.Sub(from).Minutes()
	for r, n := range counts {
		r.perMin = float64(n) / per
		rows = append(rows, r)
		if r.who == "etcdfleet-manager/probe" {
			probes += n
		}
	}
	slices.SortFunc(rows, func(a, b auditRow) int {
		return cmp.Or(cmp.Compare(b.perMin, a.perMin), cmp.Compare(a.who+a.verb+a.path, b.who+b.verb+b.path))
	})
	return rows, probes
}

// objectNames matches the name after a namespace or a resource in a path,
// so that requests for different objects of a kind are counted together.
var objectNames = regexp.MustCompile(`(/namespaces|/leases|/endpoints|/endpointslices|/services|/secrets|/configmaps|/events)/[^/]+`)

// sender names who sent a request: the manager by its user agent (which
// says what in it sent the request), the apiserver's own loopback
// clients, or the user.
func sender(e sandbox.AuditEvent) string {
	switch {
	case strings.HasPrefix(e.UserAgent, "etcdfleet-manager/"):
		return strings.Fields(e.UserAgent)[0]
	case e.User.Username == "system:apiserver":
		return "apiserver itself"
	}
	return e.User.Username
}

// formatRows prints the rows down to 1 % of the total, and the rest summed.
func formatRows(rows []auditRow) string {
	var total float64
	for _, r := range rows {
		total += r.perMin
	}
	var sb strings.Builder
	var rest float64
	for _, r := range rows {
		if r.perMin < total/100 {
			rest += r.perMin
			continue
		}
		fmt.Fprintf(&sb, "\n    %7.1f  %-32s %-7s %s", r.perMin, r.who, r.verb, r.path)
	}
	fmt.Fprintf(&sb, "\n    %7.1f  (the rest)\n    %7.1f  in all", rest, total)
	return sb.String()
}
