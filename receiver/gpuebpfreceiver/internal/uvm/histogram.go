package uvm

import (
	"sort"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// histogram is a cumulative explicit-bucket histogram (the approach of
// the receiver's internal/translate, which is internal to another package).
type histogram struct {
	counts   []uint64 // len(bounds)+1
	count    uint64
	sum      float64
	min, max float64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{counts: make([]uint64, len(bounds)+1)}
}

func (h *histogram) record(bounds []float64, v float64) {
	// Upper bounds are inclusive, as OTLP specifies.
	i := sort.SearchFloat64s(bounds, v)
	h.counts[i]++
	if h.count == 0 || v < h.min {
		h.min = v
	}
	if h.count == 0 || v > h.max {
		h.max = v
	}
	h.count++
	h.sum += v
}

// appendMetric appends the histogram as a metric of its own.
func (h *histogram) appendMetric(ms pmetric.MetricSlice, name, desc, unit string, bounds []float64, start, now pcommon.Timestamp) {
	m := ms.AppendEmpty()
	m.SetName(name)
	m.SetDescription(desc)
	m.SetUnit(unit)
	hg := m.SetEmptyHistogram()
	hg.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dp := hg.DataPoints().AppendEmpty()
	dp.SetStartTimestamp(start)
	dp.SetTimestamp(now)
	dp.SetCount(h.count)
	dp.SetSum(h.sum)
	dp.SetMin(h.min)
	dp.SetMax(h.max)
	dp.ExplicitBounds().FromRaw(bounds)
	dp.BucketCounts().FromRaw(h.counts)
}
