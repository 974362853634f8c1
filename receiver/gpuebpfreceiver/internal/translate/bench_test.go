package translate

import (
	"testing"

	"go.opentelemetry.io/collector/receiver/receivertest"

	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/metadata"
)

// benchRecords is a launch-heavy mix like a training loop's: 8 launches, a
// copy, an alloc/free pair and a synchronise, from 4 processes.
func benchRecords() [][]byte {
	var recs [][]byte
	for pid := uint32(1); pid <= 4; pid++ {
		named := ev.Event{Kind: ev.KindCallNamed, API: ev.APICuModuleGetFunction, PID: pid, TID: pid,
			Flags: ev.FlagOutValid, Out: 0xf00, Name: "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_"}
		named.Args[1] = 0xe0
		recs = append(recs, ev.AppendRecord(nil, &named))
		for i := 0; i < 8; i++ {
			l := ev.Event{Kind: ev.KindCall, API: ev.APICuLaunchKernel, PID: pid, TID: pid, Start: 1000, End: 1800,
				Flags: ev.FlagStackValid, Args: [9]uint64{0xf00, 1024, 1, 1, 256, 1, 1, 0, 0x7}}
			recs = append(recs, ev.AppendRecord(nil, &l))
		}
		c := ev.Event{Kind: ev.KindCall, API: ev.APICuMemcpyHtoDAsync, PID: pid, TID: pid, Start: 1000, End: 5000,
			Args: [9]uint64{0xd000, 0x1000, 1 << 20, 0x7}}
		recs = append(recs, ev.AppendRecord(nil, &c))
		a := ev.Event{Kind: ev.KindCall, API: ev.APICuMemAlloc, PID: pid, TID: pid, Start: 1000, End: 9000,
			Flags: ev.FlagOutValid, Out: 0xa000, Args: [9]uint64{0x1, 4096}}
		recs = append(recs, ev.AppendRecord(nil, &a))
		f := ev.Event{Kind: ev.KindCall, API: ev.APICuMemFree, PID: pid, TID: pid, Start: 1000, End: 2000,
			Args: [9]uint64{0xa000}}
		recs = append(recs, ev.AppendRecord(nil, &f))
		s := ev.Event{Kind: ev.KindCall, API: ev.APICuStreamSynchronize, PID: pid, TID: pid, Start: 1000, End: 90000,
			Args: [9]uint64{0x7}}
		recs = append(recs, ev.AppendRecord(nil, &s))
	}
	return recs
}

func benchmarkPipeline(b *testing.B, spans bool) {
	cfg := testConfig()
	cfg.Spans = spans
	tr := New(cfg, receivertest.NewNopSettings(metadata.Type), fakeResolver{}, nil, Hooks{})
	recs := benchRecords()
	var e ev.Event
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := recs[i%len(recs)]
		if err := ev.Decode(r, &e); err != nil {
			b.Fatal(err)
		}
		// Calls of a thread follow each other in time, as they do live.
		shift := uint64(i) * 100000
		e.Start, e.End = e.Start+shift, e.End+shift
		tr.Handle(&e)
		if tr.PendingSpans() >= 8192 {
			tr.TakeSpans()
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkDecodeTranslateSpans is ring record → decoded event → span +
// metric state, the receiver's per-event work with spans on.
func BenchmarkDecodeTranslateSpans(b *testing.B) { benchmarkPipeline(b, true) }

// BenchmarkDecodeTranslateMetricsOnly is the same with spans off.
func BenchmarkDecodeTranslateMetricsOnly(b *testing.B) { benchmarkPipeline(b, false) }

func BenchmarkDecode(b *testing.B) {
	recs := benchRecords()
	var e ev.Event
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := ev.Decode(recs[1+i%8], &e); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkDevrtLaunchWithGPUExec is devrt's record pair for a timed
// launch: the call (with its execution link) and, later, the GPU execution
// record becoming a child span and two histogram observations.
func BenchmarkDevrtLaunchWithGPUExec(b *testing.B) {
	cfg := testConfig()
	cfg.KernelExecution = HistogramConfig{Enabled: true, Buckets: []float64{1e-6, 1e-3}}
	cfg.KernelQueueDelay = HistogramConfig{Enabled: true, Buckets: []float64{1e-6, 1e-3}}
	tr := New(cfg, receivertest.NewNopSettings(metadata.Type), fakeResolver{}, nil, Hooks{})
	call := ev.AppendRecord(nil, &ev.Event{Kind: ev.KindCall, API: ev.APICuLaunchKernel, Source: ev.SourceDevrt,
		PID: 1, TID: 1, Start: 1000, End: 1800, Flags: ev.FlagStackValid, Args: [9]uint64{0xf00, 1024, 1, 1, 256, 1, 1, 0, 0x7}})
	exec := ev.AppendGPUExec(nil, &ev.GPUExec{API: ev.APICuLaunchKernel, Source: ev.SourceDevrt, PID: 1, TID: 1,
		CallStart: 1000, GPUStart: 3000, GPUEnd: 9000, Stream: 7, Handle: 0xf00})
	var e ev.Event
	var x ev.GPUExec
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := ev.Decode(call, &e); err != nil {
			b.Fatal(err)
		}
		shift := uint64(i) * 100000
		e.Corr = uint32(i + 1)
		e.Start, e.End = e.Start+shift, e.End+shift
		tr.Handle(&e)
		if err := ev.DecodeGPUExec(exec, &x); err != nil {
			b.Fatal(err)
		}
		x.Corr = uint32(i + 1)
		tr.HandleGPUExec(&x)
		if tr.PendingSpans() >= 8192 {
			tr.TakeSpans()
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
}
