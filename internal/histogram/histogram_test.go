package histogram

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

func TestRecord(t *testing.T) {
	b := []float64{1, 10}
	h := New(b)
	for _, v := range []float64{0.5, 1, 5, 10, 11} {
		h.Record(b, v)
	}
	require.Equal(t, []uint64{2, 2, 1}, h.Counts)
	require.Equal(t, uint64(5), h.Count)
	require.Equal(t, 27.5, h.Sum)
	require.Equal(t, 0.5, h.Min)
	require.Equal(t, 11.0, h.Max)

	ms := pmetric.NewMetricSlice()
	dp := h.AppendMetric(ms, "x", "d", "s", b, 1, 2)
	require.Equal(t, pmetric.AggregationTemporalityCumulative, ms.At(0).Histogram().AggregationTemporality())
	require.Equal(t, []uint64{2, 2, 1}, dp.BucketCounts().AsRaw())
	require.Equal(t, b, dp.ExplicitBounds().AsRaw())
}

func TestValidate(t *testing.T) {
	require.NoError(t, (&Config{Enabled: true, Buckets: []float64{1, 2}}).Validate("f"))
	require.NoError(t, (&Config{}).Validate("f"))
	require.EqualError(t, (&Config{Buckets: []float64{2, 2}}).Validate("f"), "f::buckets: must be strictly increasing, got [2 2]")
	require.EqualError(t, (&Config{Enabled: true}).Validate("f"), "f::buckets: an enabled histogram needs at least one bucket boundary")
}
