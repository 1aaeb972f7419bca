package settings

import (
	"fmt"
	"strings"
)

// Markdown renders the settings table of docs/configuration.md from the
// settings list, so the doc cannot drift from the code (a test compares).
// The chart's value of each setting is config.<key>.
func Markdown() string {
	d := Default()
	var b strings.Builder
	b.WriteString("| config key (chart: `config.<key>`) | flag | environment variable | default | meaning |\n|---|---|---|---|---|\n")
	for _, s := range Settings(&d) {
		def := s.Value()
		if def == "" {
			def = `""`
		}
		fmt.Fprintf(&b, "| `%s` | `--%s` | `%s` | `%s` | %s |\n", s.Key, s.Flag, s.Env(), def, s.Help)
	}
	return b.String()
}
