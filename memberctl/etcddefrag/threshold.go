package etcddefrag

import (
	"fmt"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// underThreshold says why a member whose database file is size bytes, of
// which inUse hold data, is not worth defragmenting under t; "" when it is.
func underThreshold(t v1alpha1.DefragThresholds, size, inUse int64) string {
	free := max(size-inUse, 0)
	if p := t.MinFragmentationPercent; p != nil && (size <= 0 || free*100 < int64(*p)*size) {
		return fmt.Sprintf("fragmentation %d%% is under minFragmentationPercent %d%% (%d of %d bytes free)",
			fragmentationPercent(size, free), *p, free, size)
	}
	if q := t.MinFreeBytes; q != nil && free < q.Value() {
		return fmt.Sprintf("%d bytes free is under minFreeBytes %s", free, q.String())
	}
	return ""
}

func fragmentationPercent(size, free int64) int64 {
	if size <= 0 {
		return 0
	}
	return free * 100 / size
}
