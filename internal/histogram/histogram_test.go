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

func TestRecordN(t *testing.T) {
	b := []float64{1, 10}
	for _, tt := range []struct {
		name     string
		obs      [][2]float64 // value, n
		counts   []uint64
		count    uint64
		sum      float64
		min, max float64
	}{
		{"weighted", [][2]float64{{0.5, 16}, {5, 16}, {11, 1}}, []uint64{16, 16, 1}, 33, 99, 0.5, 11},
		{"zero adds nothing", [][2]float64{{5, 0}, {2, 3}}, []uint64{0, 3, 0}, 3, 6, 2, 2},
		{"as Record when 1", [][2]float64{{0.5, 1}, {1, 1}}, []uint64{2, 0, 0}, 2, 1.5, 0.5, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := New(b)
			for _, o := range tt.obs {
				h.RecordN(b, o[0], uint64(o[1]))
			}
			require.Equal(t, tt.counts, h.Counts)
			require.Equal(t, tt.count, h.Count)
			require.Equal(t, tt.sum, h.Sum)
			require.Equal(t, tt.min, h.Min)
			require.Equal(t, tt.max, h.Max)
		})
	}
}

func TestValidate(t *testing.T) {
	require.NoError(t, (&Config{Enabled: true, Buckets: []float64{1, 2}}).Validate("f"))
	require.NoError(t, (&Config{}).Validate("f"))
	require.EqualError(t, (&Config{Buckets: []float64{2, 2}}).Validate("f"), "f::buckets: must be strictly increasing, got [2 2]")
	require.EqualError(t, (&Config{Enabled: true}).Validate("f"), "f::buckets: an enabled histogram needs at least one bucket boundary")
}
