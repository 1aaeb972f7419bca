package timeline

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"strings"
	"text/template"
)

// Layout sizes in pixels. The plot is wide enough for a 30-cluster bench
// to read at a glance on a laptop screen, and each lane tall enough to see
// a 0.1 s span at a 10 s scale.
const (
	width      = 960
	labelWidth = 130 // row names, left of the plot
	healWidth  = 110 // "healed 12.3 s", right of the plot
	plotLeft   = labelWidth
	plotWidth  = width - labelWidth - healWidth
	top        = 84 // title, legend and the bound's label above the plot
	laneHeight = 7
	laneGap    = 2
	rowPad     = 10
	axisHeight = 48 // tick labels and the axis title
)

// rect, line and text are the drawing's parts, placed by layout.
type rect struct {
	X, Y, W, H float64
	Fill       string
	State      string // the state's name, for the structural test and hover
	Title      string
}

type line struct {
	X1, Y1, X2, Y2 float64
	Class          string
}

// lineStyles and textStyles are presentation attributes rather than a
// <style> sheet: every SVG renderer honours them, some ignore CSS.
var lineStyles = map[string]string{
	"grid":  `stroke="#ddd" stroke-width="1"`,
	"sep":   `stroke="#eee" stroke-width="1"`,
	"axis":  `stroke="#222" stroke-width="1"`,
	"bound": `stroke="#000" stroke-width="2" stroke-dasharray="6 4"`,
}

var textStyles = map[string]string{
	"title":     `font-size="16" font-weight="bold" fill="#222"`,
	"bound":     `font-size="12" font-weight="bold" fill="#000"`,
	"healed":    `font-size="12" fill="#555"`,
	"legend":    `font-size="12" fill="#222"`,
	"row":       `font-size="12" fill="#222"`,
	"tick":      `font-size="12" fill="#222"`,
	"axislabel": `font-size="12" fill="#222"`,
}

type text struct {
	X, Y   float64
	Anchor string
	Class  string
	Body   string
}

type drawing struct {
	Width, Height int
	Rects         []rect
	Lines         []line // under the spans: grid, separators, axis
	Over          []line // over them: the bound
	Texts         []text
}

// SVG draws t. It fails only on a Timeline it cannot place: no rows.
func SVG(t Timeline) ([]byte, error) {
	if len(t.Rows) == 0 {
		return nil, fmt.Errorf("timeline: no rows to draw")
	}
	var b bytes.Buffer
	if err := svgTemplate.Execute(&b, layout(t)); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func layout(t Timeline) drawing {
	end := t.end()
	x := func(s float64) float64 { return round(plotLeft + plotWidth*math.Max(0, s)/end) }
	d := drawing{Width: width}
	d.Texts = append(d.Texts, text{X: 12, Y: 24, Class: "title", Body: t.Title})
	lx := 12.0
	for _, s := range States {
		d.Rects = append(d.Rects, rect{X: lx, Y: 40, W: 14, H: 10, Fill: s.Color(), State: s.String(), Title: "legend"})
		d.Texts = append(d.Texts, text{X: lx + 19, Y: 49, Class: "legend", Body: s.String()})
		lx += 19 + 7.2*float64(len(s.String())) + 22
	}
	y := float64(top)
	for _, r := range t.Rows {
		rowH := float64(len(r.Members)*(laneHeight+laneGap)-laneGap) + rowPad
		d.Texts = append(d.Texts, text{X: labelWidth - 8, Y: round(y + rowH/2 + 4), Anchor: "end", Class: "row", Body: r.Name})
		ly := y + rowPad/2
		for _, m := range r.Members {
			for _, s := range Spans(m, t.Origin, end) {
				d.Rects = append(d.Rects, rect{X: x(s.From), Y: ly, W: round(x(s.To) - x(s.From)), H: laneHeight,
					Fill: s.State.Color(), State: s.State.String(),
					Title: fmt.Sprintf("%s %s: %s–%s s", m.Name, s.State, secs(s.From), secs(s.To))})
			}
			ly += laneHeight + laneGap
		}
		if h := r.healed(); !h.IsZero() {
			d.Texts = append(d.Texts, text{X: plotLeft + plotWidth + 8, Y: round(y + rowH/2 + 4), Class: "healed",
				Body: "healed " + secs(h.Sub(t.Origin).Seconds()) + " s"})
		}
		d.Lines = append(d.Lines, line{X1: plotLeft, Y1: y + rowH, X2: plotLeft + plotWidth, Y2: y + rowH, Class: "sep"})
		y += rowH
	}
	bottom := y
	step := tickStep(end)
	for i := 0; float64(i)*step <= end+1e-9; i++ {
		s := float64(i) * step
		d.Lines = append(d.Lines, line{X1: x(s), Y1: top, X2: x(s), Y2: bottom + 5, Class: "grid"})
		d.Texts = append(d.Texts, text{X: x(s), Y: bottom + 18, Anchor: "middle", Class: "tick", Body: secs(s)})
	}
	d.Lines = append(d.Lines, line{X1: plotLeft, Y1: bottom, X2: plotLeft + plotWidth, Y2: bottom, Class: "axis"})
	label := t.AxisLabel
	if label == "" {
		label = "seconds"
	}
	d.Texts = append(d.Texts, text{X: plotLeft + plotWidth/2, Y: bottom + 38, Anchor: "middle", Class: "axislabel", Body: label})
	if t.Bound > 0 {
		bx := x(t.Bound.Seconds())
		d.Over = append(d.Over, line{X1: bx, Y1: top - 12, X2: bx, Y2: bottom + 5, Class: "bound"})
		d.Texts = append(d.Texts, text{X: bx, Y: top - 16, Anchor: "middle", Class: "bound",
			Body: "limiter bound " + secs(t.Bound.Seconds()) + " s"})
	}
	d.Height = int(bottom) + axisHeight
	return d
}

// tickStep is the smallest of 1, 2, 5 × 10^k seconds giving at most 10
// ticks.
func tickStep(end float64) float64 {
	for p := 0.1; ; p *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if end/(m*p) <= 10 {
				return m * p
			}
		}
	}
}

func round(f float64) float64 { return math.Round(f*10) / 10 }

// secs prints seconds with one decimal, without a trailing ".0".
func secs(s float64) string {
	return strings.TrimSuffix(strconv.FormatFloat(s, 'f', 1, 64), ".0")
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

var svgTemplate = template.Must(template.New("svg").Funcs(template.FuncMap{"esc": esc, "lineStyle": func(c string) string { return lineStyles[c] }, "textStyle": func(c string) string { return textStyles[c] }}).Parse(
	`<svg xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}" font-family="sans-serif">
<rect x="0" y="0" width="{{.Width}}" height="{{.Height}}" fill="#fff"/>
{{range .Lines}}<line class="{{.Class}}" x1="{{.X1}}" y1="{{.Y1}}" x2="{{.X2}}" y2="{{.Y2}}" {{lineStyle .Class}}/>
{{end}}{{range .Rects}}<rect x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}" fill="{{.Fill}}" data-state="{{esc .State}}"><title>{{esc .Title}}</title></rect>
{{end}}{{range .Over}}<line class="{{.Class}}" x1="{{.X1}}" y1="{{.Y1}}" x2="{{.X2}}" y2="{{.Y2}}" {{lineStyle .Class}}/>
{{end}}{{range .Texts}}<text class="{{.Class}}" x="{{.X}}" y="{{.Y}}" {{textStyle .Class}}{{with .Anchor}} text-anchor="{{.}}"{{end}}>{{esc .Body}}</text>
{{end}}</svg>
`))
