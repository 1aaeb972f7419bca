package bench

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// TestScrapeBucketsReadsAHistogramsQuantiles: the bench's split of the
// controllers' latency reads histograms as served, summed over endpoints
// and filtered by label, and takes quantiles at bucket bounds.
func TestScrapeBucketsReadsAHistogramsQuantiles(t *testing.T) {
	ftoa := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	page := "# TYPE q histogram\n" +
		`q_bucket{name="etcdmember",le="0.1"} ` + ftoa(180) + "\n" +
		`q_bucket{name="etcdmember",le="1"} ` + ftoa(198) + "\n" +
		`q_bucket{name="etcdmember",le="+Inf"} ` + ftoa(200) + "\n" +
		`q_bucket{name="etcdcluster",le="+Inf"} 7` + "\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(page)) }))
	defer srv.Close()
	before := ScrapeBuckets([]string{srv.URL}, "q", `name="etcdmember"`)
	h := ScrapeBuckets([]string{srv.URL, srv.URL}, "q", `name="etcdmember"`)
	if h.Count() != 400 || before.Count() != 200 {
		t.Fatalf("counts %v and %v, want 400 over two endpoints and 200", h.Count(), before.Count())
	}
	d := h.Since(before)
	if got := d.Quantile(0.5); got != 0.1 {
		t.Errorf("p50 %v, want 0.1", got)
	}
	if got := d.Quantile(0.99); got != 1 {
		t.Errorf("p99 %v, want 1", got)
	}
	if got := d.Quantile(0.999); !math.IsInf(got, 1) {
		t.Errorf("p99.9 %v, want +Inf", got)
	}
	if got := (Buckets{}).Quantile(0.5); got != 0 {
		t.Errorf("empty histogram: %v", got)
	}
}
