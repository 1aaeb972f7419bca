package ctl

import "testing"

// TestCellText covers the cells the apiserver's Table can hold for a CRD's
// printer column, which the envtest suite does not all produce.
func TestCellText(t *testing.T) {
	for _, c := range []struct {
		in   any
		want string
	}{
		{nil, ""},
		{int64(1000000), "1000000"},
		{true, "true"},
		{"4/6", "4/6"},
		{"first line\nsecond", "first line..."},
		{"\x1b[31mred", "^[[31mred"},
	} {
		if got := cellText(c.in); got != c.want {
			t.Errorf("cellText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
