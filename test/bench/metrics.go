package bench

import (
	"io"
	"maps"
	"math"
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
	text, ok := fetch(url)
	if !ok {
		return 0
	}
	return SumSeries(text, family)
}

// fetch reads a plain-HTTP /metrics page; false if it cannot be read.
func fetch(url string) (string, bool) {
	resp, err := http.Get(url)
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	return string(text), err == nil
}

// Buckets is a Prometheus histogram's cumulative bucket counts by upper
// bound, summed over the series whose lines hold every label given.
type Buckets map[float64]float64

// ScrapeBuckets reads family's histogram (family_bucket lines) from every
// url, summed; an endpoint that cannot be read adds nothing.
func ScrapeBuckets(urls []string, family string, labels ...string) Buckets {
	out := Buckets{}
	for _, url := range urls {
		text, ok := fetch(url)
		if !ok {
			continue
		}
		for _, line := range strings.Split(text, "\n") {
			if !strings.HasPrefix(line, family+"_bucket{") ||
				slices.ContainsFunc(labels, func(l string) bool { return !strings.Contains(line, l) }) {
				continue
			}
			_, rest, ok := strings.Cut(line, `le="`)
			le, rest, ok2 := strings.Cut(rest, `"`)
			f := strings.Fields(rest)
			if !ok || !ok2 || len(f) == 0 {
				continue
			}
			bound, err1 := strconv.ParseFloat(le, 64) // "+Inf" parses as +Inf
			n, err2 := strconv.ParseFloat(f[len(f)-1], 64)
			if err1 == nil && err2 == nil {
				out[bound] += n
			}
		}
	}
	return out
}

// Since is the histogram of the observations made after before was read.
func (b Buckets) Since(before Buckets) Buckets {
	out := Buckets{}
	for le, n := range b {
		out[le] = n - before[le]
	}
	return out
}

// Count is how many observations the histogram holds.
func (b Buckets) Count() float64 { return b[math.Inf(1)] }

// Quantile is the upper bound of the bucket that holds the q-quantile
// (the pessimistic reading of a histogram), +Inf past the last bound, and
// 0 for an empty histogram.
func (b Buckets) Quantile(q float64) float64 {
	total := b.Count()
	if total == 0 {
		return 0
	}
	bounds := slices.Sorted(maps.Keys(b))
	for _, le := range bounds {
		if b[le] >= q*total {
			return le
		}
	}
	return math.Inf(1)
}
