package uvm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-gpu/otelcol-gpu/internal/fuzzseed"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmfentry"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmtools"
)

// sums flattens the sums and histograms of md: "resource|metric|attrs" ->
// value (histograms: their count). It fails t on a negative sum or a
// histogram whose buckets do not add up to its count.
func sums(t *testing.T, md pmetric.Metrics) (all, monotonic map[string]float64) {
	all, monotonic = map[string]float64{}, map[string]float64{}
	for i := 0; i < md.ResourceMetrics().Len(); i++ {
		rm := md.ResourceMetrics().At(i)
		res := fmt.Sprint(rm.Resource().Attributes().AsRaw())
		for j := 0; j < rm.ScopeMetrics().Len(); j++ {
			ms := rm.ScopeMetrics().At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				switch m.Type() {
				case pmetric.MetricTypeSum:
					dps := m.Sum().DataPoints()
					for d := 0; d < dps.Len(); d++ {
						dp := dps.At(d)
						v := dp.DoubleValue() + float64(dp.IntValue())
						if v < 0 {
							t.Fatalf("%s %v = %v: negative", m.Name(), dp.Attributes().AsRaw(), v)
						}
						key := res + "|" + m.Name() + "|" + fmt.Sprint(dp.Attributes().AsRaw())
						all[key] = v
						if m.Sum().IsMonotonic() {
							monotonic[key] = v
						}
					}
				case pmetric.MetricTypeHistogram:
					dps := m.Histogram().DataPoints()
					for d := 0; d < dps.Len(); d++ {
						dp := dps.At(d)
						var n uint64
						for _, c := range dp.BucketCounts().AsRaw() {
							n += c
						}
						if n != dp.Count() {
							t.Fatalf("%s: buckets add up to %d, count %d", m.Name(), n, dp.Count())
						}
						key := res + "|" + m.Name() + "|" + fmt.Sprint(dp.Attributes().AsRaw())
						monotonic[key] = float64(dp.Count())
					}
				}
			}
		}
	}
	return all, monotonic
}

// checkMonotonic fails t when a monotonic series of before went down in
// after.
func checkMonotonic(t *testing.T, before, after map[string]float64) {
	for k, v := range before {
		if w, ok := after[k]; ok && w < v {
			t.Fatalf("%s went from %v to %v", k, v, w)
		}
	}
}

// FuzzAccount: any driver entries (the tools interface's, decoded by
// uvmtools.Decode) accounted for a process never panic, and the metrics
// they make are non-negative, monotonic where declared so, and
// histograms add up. The input is a run of 72-byte V2 entries (a shorter
// tail is one V1 entry or ignored); the events are accounted in two
// halves with a Scrape after each. Seeds: testdata/fuzz/FuzzAccount.
func FuzzAccount(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg := NewDefaultConfig()
		cfg.FaultSamples.Enabled = true
		s := newTestSource(t, cfg)
		defer func() { require.NoError(t, s.Shutdown(context.Background())) }()
		table := gpuTable(t)
		var evs []uvmtools.Event
		for len(b) > 0 {
			n := min(len(b), uvmtools.EntrySizeV2)
			if n < uvmtools.EntrySizeV2 {
				n = min(n, uvmtools.EntrySizeV1)
			}
			if e, err := uvmtools.Decode(b[:n]); err == nil {
				evs = append(evs, e)
			}
			b = b[n:]
		}
		var before map[string]float64
		for half, part := range [][]uvmtools.Event{evs[:len(evs)/2], evs[len(evs)/2:]} {
			for _, e := range part {
				s.Consume(7, table, e)
			}
			md, err := s.Scrape(context.Background())
			require.NoError(t, err)
			_, mono := sums(t, md)
			if half == 1 {
				checkMonotonic(t, before, mono)
			}
			before = mono
			_, _ = s.Pattern(7)
		}
		for len(s.logs) > 0 {
			<-s.logs
		}
	})
}

// FuzzConsumeRecord: any records of the fentry backend (uvmfentry.Decode)
// for a tracked process never panic and make metrics as FuzzAccount's. The
// input is a run of 104-byte records, accounted in two halves with a
// Scrape after each. Seeds: testdata/fuzz/FuzzConsumeRecord.
func FuzzConsumeRecord(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		probe := newFakeProbe()
		s, _, _, _ := backendSource(t, BackendFentry, probe, nil)
		s.cfg.FaultSamples.Enabled = true
		require.NoError(t, s.Track(100))
		var recs []uvmfentry.Record
		for ; len(b) >= uvmfentry.RecordSize; b = b[uvmfentry.RecordSize:] {
			if r, err := uvmfentry.Decode(b[:uvmfentry.RecordSize]); err == nil {
				recs = append(recs, r)
			}
		}
		var before map[string]float64
		for half, part := range [][]uvmfentry.Record{recs[:len(recs)/2], recs[len(recs)/2:]} {
			for _, r := range part {
				if r.PID != 0 {
					r.PID = 100 + r.PID%2 // the tracked process, and one not tracked
				}
				s.consumeRecord(r)
			}
			md, err := s.Scrape(context.Background())
			require.NoError(t, err)
			_, mono := sums(t, md)
			if half == 1 {
				checkMonotonic(t, before, mono)
			}
			before = mono
		}
		for len(s.logs) > 0 {
			<-s.logs
		}
		require.NoError(t, s.Shutdown(context.Background()))
	})
}

// TestWriteFuzzSeeds writes this package's fuzz seeds from the decoders'
// own (testdata/fuzz/FuzzDecode of uvmtools and uvmfentry): each entry
// alone, and runs of them.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("UVM_WRITE_SEEDS") == "" {
		t.Skip("set UVM_WRITE_SEEDS=1 to rewrite testdata/fuzz/FuzzAccount and FuzzConsumeRecord")
	}
	read := func(dir, prefix string) (names []string, bodies [][]byte) {
		files, err := filepath.Glob(filepath.Join(dir, prefix+"*"))
		require.NoError(t, err)
		for _, p := range files {
			b, err := fuzzseed.ReadBytes(p)
			require.NoError(t, err, p)
			names = append(names, filepath.Base(p))
			bodies = append(bodies, b)
		}
		return names, bodies
	}
	write := func(target, name string, b []byte) {
		require.NoError(t, fuzzseed.Write("", target, name, b))
	}
	for _, c := range []struct{ target, dir, prefix string }{
		{"FuzzAccount", "../uvmtools/testdata/fuzz/FuzzDecode", "v2_"},
		{"FuzzAccount", "../uvmtools/testdata/fuzz/FuzzDecode", "v1_gpu_fault"},
		{"FuzzConsumeRecord", "../uvmfentry/testdata/fuzz/FuzzDecode", ""},
	} {
		names, bodies := read(c.dir, c.prefix)
		require.NotEmpty(t, names, c.dir)
		var all, twice []byte
		for i, b := range bodies {
			write(c.target, names[i], b)
			all = append(all, b...)
			twice = append(twice, b...)
			twice = append(twice, b...)
		}
		if c.prefix != "v1_gpu_fault" {
			write(c.target, "all", all)
			write(c.target, "each_twice", twice)
		}
	}
}
