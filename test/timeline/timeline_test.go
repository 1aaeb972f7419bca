package timeline

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 4, 15, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func TestSpans(t *testing.T) {
	for _, c := range []struct {
		name string
		m    Member
		want []Span
	}{
		{"every milestone", Member{Terminal: at(0.5), Asked: at(1), Granted: at(3), Deleted: at(3.1), Ready: at(5)},
			[]Span{{Terminal, 0.5, 1}, {Waiting, 1, 3}, {Replacing, 3, 5}, {Ready, 5, 10}}},
		{"granted at once: no waiting span", Member{Terminal: at(0), Asked: at(1), Granted: at(1), Deleted: at(1.2), Ready: at(2)},
			[]Span{{Terminal, 0, 1}, {Replacing, 1, 2}, {Ready, 2, 10}}},
		{"no grant logged: replacing from the delete", Member{Terminal: at(0), Deleted: at(2), Ready: at(4)},
			[]Span{{Terminal, 0, 2}, {Replacing, 2, 4}, {Ready, 4, 10}}},
		{"not healed yet: replacing to the end", Member{Terminal: at(1), Asked: at(1.5), Granted: at(2)},
			[]Span{{Terminal, 1, 1.5}, {Waiting, 1.5, 2}, {Replacing, 2, 10}}},
		{"never down", Member{}, []Span{{Ready, 0, 10}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Spans(c.m, t0, 10); !reflect.DeepEqual(got, c.want) {
				t.Errorf("Spans = %v, want %v", got, c.want)
			}
		})
	}
}

// sample is a heal of two clusters, one throttled; its names need
// escaping.
func sample() Timeline {
	return Timeline{
		Title: "fleet heal <2 clusters>", Origin: t0, AxisLabel: "seconds since the first member Pod was seen terminal",
		Bound: 4 * time.Second,
		Rows: []Row{
			{Name: "w1/etcd-a", Members: []Member{
				{Name: "etcd-a-0", Terminal: at(0), Asked: at(0.2), Granted: at(0.2), Deleted: at(0.3), Ready: at(1.5)},
				{Name: "etcd-a-1", Terminal: at(0.1), Asked: at(0.3), Granted: at(0.3), Deleted: at(0.4), Ready: at(1.8)},
				{Name: "etcd-a-2", Terminal: at(0.4), Asked: at(0.6), Granted: at(0.6), Deleted: at(0.7), Ready: at(2.1)},
			}},
			{Name: "w2/etcd-a&b", Members: []Member{
				{Name: "etcd-a-0", Terminal: at(0), Asked: at(0.2), Granted: at(2.7), Deleted: at(2.8), Ready: at(4.1)},
				{Name: "etcd-a-1", Terminal: at(0.2), Asked: at(0.4), Granted: at(3.2), Deleted: at(3.3), Ready: at(4.6)},
				{Name: "etcd-a-2", Terminal: at(0.3), Deleted: at(3.6), Ready: at(5)},
			}},
		},
	}
}

// svgDoc is what the structural test reads back from the SVG.
type svgDoc struct {
	Width  int `xml:"width,attr"`
	Height int `xml:"height,attr"`
	Rects  []struct {
		X     float64 `xml:"x,attr"`
		Y     float64 `xml:"y,attr"`
		W     float64 `xml:"width,attr"`
		State string  `xml:"data-state,attr"`
		Title string  `xml:"title"`
	} `xml:"rect"`
	Lines []struct {
		Class string  `xml:"class,attr"`
		X1    float64 `xml:"x1,attr"`
	} `xml:"line"`
	Texts []struct {
		Class string  `xml:"class,attr"`
		X     float64 `xml:"x,attr"`
		Body  string  `xml:",chardata"`
	} `xml:"text"`
}

func parse(t *testing.T, b []byte) svgDoc {
	t.Helper()
	// Well-formed: every token decodes.
	dec := xml.NewDecoder(bytes.NewReader(b))
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
	}
	var d svgDoc
	if err := xml.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestSVGStructure checks what a reader needs from the picture: a lane per
// member with its spans in time order and in the right colours, the bound
// where it is, a legend, an axis in seconds, every row named.
func TestSVGStructure(t *testing.T) {
	tl := sample()
	b, err := SVG(tl)
	if err != nil {
		t.Fatal(err)
	}
	d := parse(t, b)
	end := tl.end()
	xOf := func(s float64) float64 { return round(plotLeft + plotWidth*s/end) }

	legend := map[string]bool{}
	spans := map[string][]float64{}  // state -> widths
	lanes := map[float64][]float64{} // lane y -> span x in order
	for _, r := range d.Rects {
		switch {
		case r.Title == "legend":
			legend[r.State] = true
		case r.State != "":
			spans[r.State] = append(spans[r.State], r.W)
			lanes[r.Y] = append(lanes[r.Y], r.X)
		}
	}
	for _, s := range States {
		if !legend[s.String()] {
			t.Errorf("legend lacks %q", s)
		}
	}
	if len(lanes) != 6 {
		t.Errorf("%d lanes, want one per member (6)", len(lanes))
	}
	for y, xs := range lanes {
		for i := 1; i < len(xs); i++ {
			if xs[i] < xs[i-1] {
				t.Errorf("lane at y=%v: spans out of time order %v", y, xs)
			}
		}
	}
	// Throttled: w2's first two members wait 2.5 and 2.8 s; the third has
	// no grant logged, so no waiting span.
	if n := len(spans[Waiting.String()]); n != 2 {
		t.Errorf("%d waiting spans, want 2", n)
	}
	if n := len(spans[Ready.String()]); n != 6 {
		t.Errorf("%d Ready spans, want 6", n)
	}
	if n := len(spans[Terminal.String()]); n != 6 {
		t.Errorf("%d terminal spans, want 6", n)
	}

	var bound []float64
	for _, l := range d.Lines {
		if l.Class == "bound" {
			bound = append(bound, l.X1)
		}
	}
	if len(bound) != 1 || bound[0] != xOf(4) {
		t.Errorf("bound lines at %v, want one at x=%v (4 s)", bound, xOf(4))
	}
	texts := map[string]bool{}
	var ticks []string
	for _, x := range d.Texts {
		texts[x.Body] = true
		if x.Class == "tick" {
			ticks = append(ticks, x.Body)
			if s, err := strconv.ParseFloat(x.Body, 64); err != nil || x.X != xOf(s) {
				t.Errorf("tick %q at x=%v, want a number of seconds at x=%v", x.Body, x.X, xOf(s))
			}
		}
	}
	if want := "0 1 2 3 4 5 6"; strings.Join(ticks, " ") != want {
		t.Errorf("ticks %v, want %s", ticks, want)
	}
	for _, want := range []string{"w1/etcd-a", "w2/etcd-a&b", "fleet heal <2 clusters>", "limiter bound 4 s",
		"healed 2.1 s", "healed 5 s", "seconds since the first member Pod was seen terminal"} {
		if !texts[want] {
			t.Errorf("no text %q", want)
		}
	}
	if d.Width != width || d.Height <= top {
		t.Errorf("size %dx%d", d.Width, d.Height)
	}
}

// TestSVGGolden keeps the picture's bytes: a change shows in review as a
// diff of testdata/heal-timeline.svg (UPDATE_GOLDEN=1 rewrites it; look
// at it before committing).
func TestSVGGolden(t *testing.T) {
	b, err := SVG(sample())
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "heal-timeline.svg")
	if os.Getenv("UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(golden, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("SVG differs from %s; rerun with UPDATE_GOLDEN=1 and look at it", golden)
	}
}

func TestSVGNoRows(t *testing.T) {
	if _, err := SVG(Timeline{}); err == nil {
		t.Error("no error for a timeline without rows")
	}
}

func TestLimiterBound(t *testing.T) {
	if got := LimiterBound(18, 10, 2, time.Second); got != 5*time.Second {
		t.Errorf("18 replacements, burst 10, 2/s, etcd start 1 s: bound %s, want 5s", got)
	}
	if got := LimiterBound(6, 10, 2, time.Second); got != time.Second {
		t.Errorf("within the burst: bound %s, want the etcd start alone", got)
	}
}
