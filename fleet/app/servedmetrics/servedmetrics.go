// Package servedmetrics lists every metric family the fleet manager serves
// on /metrics, with its type, help and label names, for tests: the
// promlint check of the names (servedmetrics_test.go) and the chart's
// check that its alerts and Grafana board name only served series
// (charts/monitoring_test.go). A rename in the code then fails both.
//
// Gathering controller-runtime's metrics.Registry is not enough on its
// own: a vector (CounterVec, GaugeVec, HistogramVec) with no series yet,
// which is every per-cluster family of a manager that has seen no cluster,
// is left out of Gather. Families lists those too, from the registry's
// descriptors, without adding a series to the process's vectors.
package servedmetrics

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/etcdfleet/etcdfleet/fleet/app"
	"github.com/etcdfleet/etcdfleet/fleet/limiter"
)

// Families returns every family the manager serves, sorted by name: those
// its packages register on metrics.Registry when imported (fleet/app
// imports them all, as cmd/etcdfleet-manager does), and those a running
// manager adds (app.RegisterRunMetrics), registered here on a registry of
// their own so that no manager in the same process collides with them.
// Families without a series carry one with placeholder label values
// ("placeholder"), so that their label names are linted too.
func Families() ([]*dto.MetricFamily, error) {
	run := prometheus.NewPedanticRegistry()
	if err := app.RegisterRunMetrics(run, limiter.New(limiter.Options{}), limiter.NewSlots(limiter.SlotOptions{})); err != nil {
		return nil, err
	}
	var out []*dto.MetricFamily
	var errs []error
	for _, reg := range []*prometheus.Registry{registry(), run} {
		fams, err := FamiliesOf(reg)
		out = append(out, fams...)
		errs = append(errs, err)
	}
	slices.SortFunc(out, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out, errors.Join(errs...)
}

// Names returns the served family names with their types.
func Names(fams []*dto.MetricFamily) map[string]dto.MetricType {
	out := map[string]dto.MetricType{}
	for _, f := range fams {
		out[f.GetName()] = f.GetType()
	}
	return out
}

// SeriesNames returns the names a query may select for each family: the
// family's own name, and for a histogram or summary the _bucket, _sum and
// _count series the exposition format writes (a histogram is never
// selected by its bare name). Classic histograms only: the manager serves
// no native histogram.
func SeriesNames(fams []*dto.MetricFamily) map[string]string {
	out := map[string]string{}
	for _, f := range fams {
		n := f.GetName()
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				out[n+s] = n
			}
		case dto.MetricType_SUMMARY:
			out[n], out[n+"_sum"], out[n+"_count"] = n, n, n
		default:
			out[n] = n
		}
	}
	return out
}

// registry is controller-runtime's metrics.Registry, which the manager's
// metrics server serves.
func registry() *prometheus.Registry {
	r, ok := metrics.Registry.(*prometheus.Registry)
	if !ok {
		// Replaced by someone: then Families would no longer describe
		// what the manager serves, and must be taught what to read.
		panic(fmt.Sprintf("metrics.Registry is a %T, not a *prometheus.Registry", metrics.Registry))
	}
	return r
}

// FamiliesOf gathers reg and adds a family for every descriptor reg
// describes that Gather left out (a vector without series). Families
// reads the manager's registries with it; tests may read their own.
func FamiliesOf(reg *prometheus.Registry) ([]*dto.MetricFamily, error) {
	fams, err := reg.Gather()
	if err != nil {
		return nil, fmt.Errorf("gather: %w", err)
	}
	have := map[string]bool{}
	for _, f := range fams {
		have[f.GetName()] = true
	}
	descs := make(chan *prometheus.Desc)
	go func() { reg.Describe(descs); close(descs) }()
	var all []*prometheus.Desc
	for d := range descs {
		all = append(all, d)
	}
	var errs []error
	for _, d := range all {
		name := fqName(d)
		if have[name] {
			continue
		}
		f, err := placeholderFamily(reg, d)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		have[name] = true
		fams = append(fams, f)
	}
	return fams, errors.Join(errs...)
}

// placeholderFamily builds the family of d, a descriptor with no series,
// as it will be served once it has one. The collector registered for d is
// found by registering one that describes d alone: the registry answers
// with the collector it already holds for that descriptor. Its Go type
// gives the family's type, and a constant series with placeholder label
// values, gathered from a registry of its own, gives the rest; the
// process's own vector is not touched.
func placeholderFamily(reg *prometheus.Registry, d *prometheus.Desc) (*dto.MetricFamily, error) {
	var are prometheus.AlreadyRegisteredError
	if err := reg.Register(descOnly{d}); !errors.As(err, &are) {
		if err == nil {
			reg.Unregister(descOnly{d})
		}
		return nil, fmt.Errorf("no series and no collector of its own to read its type from (register answered %v)", err)
	}
	var m prometheus.Metric
	for n := 0; n <= 16; n++ {
		lvs := slices.Repeat([]string{"placeholder"}, n)
		var err error
		switch are.ExistingCollector.(type) {
		case *prometheus.CounterVec:
			m, err = prometheus.NewConstMetric(d, prometheus.CounterValue, 0, lvs...)
		case *prometheus.GaugeVec:
			m, err = prometheus.NewConstMetric(d, prometheus.GaugeValue, 0, lvs...)
		case *prometheus.HistogramVec:
			m, err = prometheus.NewConstHistogram(d, 0, 0, map[float64]uint64{1: 0}, lvs...)
		case *prometheus.SummaryVec:
			m, err = prometheus.NewConstSummary(d, 0, 0, nil, lvs...)
		default:
			return nil, fmt.Errorf("no series, and its collector is a %T, not a vector", are.ExistingCollector)
		}
		if err == nil {
			break
		}
	}
	if m == nil {
		return nil, errors.New("no label count up to 16 fits its descriptor")
	}
	one := prometheus.NewPedanticRegistry()
	if err := one.Register(constCollector{d, m}); err != nil {
		return nil, err
	}
	fams, err := one.Gather()
	if err != nil || len(fams) != 1 {
		return nil, fmt.Errorf("gathering its placeholder: %d families, %v", len(fams), err)
	}
	return fams[0], nil
}

// fqName reads a descriptor's name from its String form,
// Desc{fqName: "name", ...}: Desc has no accessor for it.
func fqName(d *prometheus.Desc) string {
	s := d.String()
	const key = `fqName: "`
	i := strings.Index(s, key)
	if i < 0 {
		return s
	}
	s = s[i+len(key):]
	if j := strings.IndexByte(s, '"'); j >= 0 {
		return s[:j]
	}
	return s
}

// descOnly describes one descriptor and collects nothing.
type descOnly struct{ d *prometheus.Desc }

func (c descOnly) Describe(ch chan<- *prometheus.Desc) { ch <- c.d }
func (descOnly) Collect(chan<- prometheus.Metric)      {}

// constCollector serves one constant series of its descriptor.
type constCollector struct {
	d *prometheus.Desc
	m prometheus.Metric
}

func (c constCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.d }
func (c constCollector) Collect(ch chan<- prometheus.Metric) { ch <- c.m }
