package etcddefrag

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
)

// TestUnderThreshold: a member passes only when it passes every threshold
// that is set; with none set every member passes.
func TestUnderThreshold(t *testing.T) {
	mi := resource.MustParse("1Mi")
	for _, c := range []struct {
		name        string
		t           v1alpha1.DefragThresholds
		size, inUse int64
		skip        bool
	}{
		{"no thresholds", v1alpha1.DefragThresholds{}, 100, 100, false},
		{"at the percentage", v1alpha1.DefragThresholds{MinFragmentationPercent: ptr.To[int32](50)}, 100, 50, false},
		{"under the percentage", v1alpha1.DefragThresholds{MinFragmentationPercent: ptr.To[int32](50)}, 100, 51, true},
		{"empty file", v1alpha1.DefragThresholds{MinFragmentationPercent: ptr.To[int32](1)}, 0, 0, true},
		{"enough bytes", v1alpha1.DefragThresholds{MinFreeBytes: &mi}, 3 << 20, 2 << 20, false},
		{"too few bytes", v1alpha1.DefragThresholds{MinFreeBytes: &mi}, 3 << 20, 2<<20 + 1, true},
		{"both, one fails", v1alpha1.DefragThresholds{MinFragmentationPercent: ptr.To[int32](10), MinFreeBytes: &mi}, 2 << 20, 1<<20 + 1, true},
		{"both pass", v1alpha1.DefragThresholds{MinFragmentationPercent: ptr.To[int32](10), MinFreeBytes: &mi}, 2 << 20, 1 << 20, false},
	} {
		if got := underThreshold(c.t, c.size, c.inUse); (got != "") != c.skip {
			t.Errorf("%s: underThreshold = %q, want skip %v", c.name, got, c.skip)
		}
	}
}
