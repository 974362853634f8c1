package uvm

import (
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvm/internal/metadata"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmfentry"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmtools"
)

// tableOf builds the ProcessorTable a fixture recorded. uvmtools has no
// exported constructor (tables come from the driver), so this sets its
// unexported map through reflect: test-only.
func tableOf(t testing.TB, procs []uvmtools.FixtureProcessor) uvmtools.ProcessorTable {
	byIndex := map[uvmtools.Processor]uvmtools.ProcessorInfo{}
	for _, p := range procs {
		info := uvmtools.ProcessorInfo{Index: uvmtools.Processor(p.Index), UUID: parseUUID(t, p.UUID), MIG: p.MIG}
		info.Parent = info.UUID
		if p.Parent != "" {
			info.Parent = parseUUID(t, p.Parent)
		}
		byIndex[info.Index] = info
	}
	var tab uvmtools.ProcessorTable
	tab.Version = uvmtools.V2
	f := reflect.ValueOf(&tab).Elem().FieldByName("byIndex")
	require.True(t, f.IsValid(), "uvmtools.ProcessorTable has no byIndex field any more")
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(reflect.ValueOf(byIndex))
	return tab
}

func parseUUID(t testing.TB, s string) (u uvmtools.UUID) {
	b, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
	require.NoError(t, err)
	require.Len(t, b, 16)
	copy(u[:], b)
	return u
}

// gpuTable is a table with the CPU and one GPU at index 1.
func gpuTable(t testing.TB) uvmtools.ProcessorTable {
	return tableOf(t, []uvmtools.FixtureProcessor{
		{Index: 0, UUID: uvmtools.CPUUUID.String()},
		{Index: 1, UUID: "948ad24a-c62e-62f7-d2bd-ad21819f9f3d"},
	})
}

const testHWID = "GPU-948ad24a-c62e-62f7-d2bd-ad21819f9f3d"

func newTestSource(t testing.TB, cfg Config, opts ...Option) *Source {
	opts = append([]Option{
		WithHostName("host"),
		WithClock(func() time.Time { return time.Unix(1000, 0) }),
		WithRawClockOffset(0),
		WithOpener(func(int, uvmtools.Options) (Tracker, error) { return nil, uvmtools.ErrNoDevice }),
		// Tests choose the fentry backend explicitly (backend_test.go): by
		// default it cannot run, whatever this machine allows.
		WithFentryLoader(func(uvmfentry.Options) (FentrySource, error) { return nil, uvmfentry.ErrModuleNotLoaded }),
	}, opts...)
	set := receivertest.NewNopSettings(metadata.Type)
	return New(cfg, set, nil, opts...)
}

// point is one number data point with its resource's hw.id and pid.
type point struct {
	hwid  string
	pid   int64
	attrs map[string]any
	value float64
}

// points collects the number data points of metric name.
func points(md pmetric.Metrics, name string) []point {
	var out []point
	for i := 0; i < md.ResourceMetrics().Len(); i++ {
		rm := md.ResourceMetrics().At(i)
		var hwid string
		var pid int64
		if v, ok := rm.Resource().Attributes().Get("hw.id"); ok {
			hwid = v.Str()
		}
		if v, ok := rm.Resource().Attributes().Get("process.pid"); ok {
			pid = v.Int()
		}
		for j := 0; j < rm.ScopeMetrics().Len(); j++ {
			ms := rm.ScopeMetrics().At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				if m.Name() != name {
					continue
				}
				var dps pmetric.NumberDataPointSlice
				switch m.Type() {
				case pmetric.MetricTypeSum:
					dps = m.Sum().DataPoints()
				case pmetric.MetricTypeGauge:
					dps = m.Gauge().DataPoints()
				default:
					continue
				}
				for d := 0; d < dps.Len(); d++ {
					dp := dps.At(d)
					v := dp.DoubleValue()
					if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
						v = float64(dp.IntValue())
					}
					out = append(out, point{hwid: hwid, pid: pid, attrs: dp.Attributes().AsRaw(), value: v})
				}
			}
		}
	}
	return out
}

// sumBy adds the points of name grouped by key.
func sumBy(md pmetric.Metrics, name string, key func(point) string) map[string]uint64 {
	out := map[string]uint64{}
	for _, p := range points(md, name) {
		out[key(p)] += uint64(p.value)
	}
	return out
}

func attr(p point, k string) string {
	if v, ok := p.attrs[k]; ok {
		return v.(string)
	}
	return ""
}

// histogramOf returns the one data point of histogram name on hw.id hwid.
func histogramOf(t testing.TB, md pmetric.Metrics, name, hwid string) pmetric.HistogramDataPoint {
	var found []pmetric.HistogramDataPoint
	for i := 0; i < md.ResourceMetrics().Len(); i++ {
		rm := md.ResourceMetrics().At(i)
		v, _ := rm.Resource().Attributes().Get("hw.id")
		if v.Str() != hwid {
			continue
		}
		ms := rm.ScopeMetrics().At(0).Metrics()
		for k := 0; k < ms.Len(); k++ {
			if ms.At(k).Name() == name {
				require.Equal(t, pmetric.MetricTypeHistogram, ms.At(k).Type())
				found = append(found, ms.At(k).Histogram().DataPoints().At(0))
			}
		}
	}
	require.Len(t, found, 1, "histogram %s on %q", name, hwid)
	return found[0]
}

func metricNames(md pmetric.Metrics) map[string]bool {
	out := map[string]bool{}
	for i := 0; i < md.ResourceMetrics().Len(); i++ {
		sms := md.ResourceMetrics().At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			for k := 0; k < sms.At(j).Metrics().Len(); k++ {
				out[sms.At(j).Metrics().At(k).Name()] = true
			}
		}
	}
	return out
}

var _ = pcommon.NewMap
