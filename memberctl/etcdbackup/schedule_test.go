package etcdbackup

import (
	"strings"
	"testing"
	"time"
)

func TestSnapshotNamesFitAndDiffer(t *testing.T) {
	due := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	if got := snapshotName("prod", due); got != "prod-20260304050607" {
		t.Errorf("snapshotName = %q", got)
	}
	long := strings.Repeat("a", 56)
	a, b := snapshotName(long, due), snapshotName(long[:55]+"b", due)
	if len(a) > maxSnapshotName || a == b {
		t.Errorf("long names %q and %q: too long or equal", a, b)
	}
	if !strings.HasSuffix(a, "-20260304050607") {
		t.Errorf("%q lost its due time", a)
	}
}
