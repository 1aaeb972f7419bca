package ctl

import (
	"testing"
	"time"
)

// --rotate-before means nothing without the opt-in, and is refused before
// any cluster is touched.
func TestRotateBeforeNeedsOptIn(t *testing.T) {
	base := RegisterOptions{Name: "a", ClusterWide: true}
	for _, c := range []struct {
		allow  bool
		before time.Duration
		ok     bool
	}{{false, 0, true}, {true, 0, true}, {true, time.Hour, true}, {false, time.Hour, false}, {true, -time.Hour, false}} {
		o := base
		o.AllowTokenRotation, o.RotateBefore = c.allow, c.before
		if err := o.Validate(); (err == nil) != c.ok {
			t.Errorf("allow=%v rotate-before=%s: Validate() = %v", c.allow, c.before, err)
		}
	}
}
