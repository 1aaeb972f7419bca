package bench

import (
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// SumSeries adds up every sample of a family in Prometheus text format;
// with labels (such as `verb="GET"`), only the samples that have them all.
func SumSeries(text, family string, labels ...string) float64 {
	var sum float64
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, family+"{") && !strings.HasPrefix(line, family+" ") {
			continue
		}
		if slices.ContainsFunc(labels, func(l string) bool { return !strings.Contains(line, l) }) {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// Scrape reads a plain-HTTP /metrics endpoint and returns SumSeries of
// family, or 0 if it cannot be read.
func Scrape(url, family string) float64 {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0
	}
	return SumSeries(string(text), family)
}
