// Package histogram is the cumulative explicit-bucket histogram the
// receiver's sources keep in memory and emit as OTLP histograms, and the
// configuration of one. mdatagen cannot describe histogram metrics, so the
// sources that have them build them with this.
package histogram

import (
	"fmt"
	"sort"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Config enables a histogram metric and sets its explicit bounds.
type Config struct {
	Enabled bool      `mapstructure:"enabled"`
	Buckets []float64 `mapstructure:"buckets"`
}

// Validate checks the bounds; field names the setting in the error.
func (c *Config) Validate(field string) error {
	for i := 1; i < len(c.Buckets); i++ {
		if !(c.Buckets[i] > c.Buckets[i-1]) {
			return fmt.Errorf("%s::buckets: must be strictly increasing, got %v", field, c.Buckets)
		}
	}
	if c.Enabled && len(c.Buckets) == 0 {
		return fmt.Errorf("%s::buckets: an enabled histogram needs at least one bucket boundary", field)
	}
	return nil
}

// Histogram is a cumulative explicit-bucket histogram. The bounds are not
// kept: they are the configuration's, passed to each call.
type Histogram struct {
	Counts   []uint64 // len(bounds)+1
	Count    uint64
	Sum      float64
	Min, Max float64
}

// New returns an empty histogram for bounds.
func New(bounds []float64) *Histogram {
	return &Histogram{Counts: make([]uint64, len(bounds)+1)}
}

// Record adds v. Upper bounds are inclusive, as OTLP specifies.
func (h *Histogram) Record(bounds []float64, v float64) { h.RecordN(bounds, v, 1) }

// RecordN adds v as n observations: a sample standing for n (a block
// the device probes sampled 1 in n). n 0 adds nothing.
func (h *Histogram) RecordN(bounds []float64, v float64, n uint64) {
	if n == 0 {
		return
	}
	h.Counts[sort.SearchFloat64s(bounds, v)] += n
	if h.Count == 0 || v < h.Min {
		h.Min = v
	}
	if h.Count == 0 || v > h.Max {
		h.Max = v
	}
	h.Count += n
	h.Sum += v * float64(n)
}

// AppendTo appends the histogram as a data point to dps.
func (h *Histogram) AppendTo(dps pmetric.HistogramDataPointSlice, bounds []float64, start, now pcommon.Timestamp) pmetric.HistogramDataPoint {
	dp := dps.AppendEmpty()
	dp.SetStartTimestamp(start)
	dp.SetTimestamp(now)
	dp.SetCount(h.Count)
	dp.SetSum(h.Sum)
	dp.SetMin(h.Min)
	dp.SetMax(h.Max)
	dp.ExplicitBounds().FromRaw(bounds)
	dp.BucketCounts().FromRaw(h.Counts)
	return dp
}

// AppendMetric appends a cumulative histogram metric of this one data point.
func (h *Histogram) AppendMetric(ms pmetric.MetricSlice, name, desc, unit string, bounds []float64, start, now pcommon.Timestamp) pmetric.HistogramDataPoint {
	m := ms.AppendEmpty()
	m.SetName(name)
	m.SetDescription(desc)
	m.SetUnit(unit)
	m.SetEmptyHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	return h.AppendTo(m.Histogram().DataPoints(), bounds, start, now)
}
